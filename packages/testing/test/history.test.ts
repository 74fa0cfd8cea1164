import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  assertHistory,
  checkHistory,
  type HistoryEvent,
  HistoryRecorder,
  HistoryViolationError,
  parseEvents,
  readHistory,
} from '../src/index.js';

const ms = (n: number) => BigInt(Math.round(n * 1e6));

function acquire(process: string, at: number, fence: number, deadline?: number): HistoryEvent {
  return {
    op: 'acquire',
    process,
    lock: 'L',
    at: ms(at),
    fence,
    ...(deadline ? { deadline: ms(deadline) } : {}),
  };
}
function release(process: string, at: number): HistoryEvent {
  return { op: 'release', process, lock: 'L', at: ms(at) };
}
function write(process: string, at: number, fence: number, accepted: boolean): HistoryEvent {
  return { op: 'write', process, lock: 'L', at: ms(at), fence, accepted };
}
function lost(process: string, at: number): HistoryEvent {
  return { op: 'lost', process, lock: 'L', at: ms(at) };
}

/** An extension of a's hold (fence 1) that came back at `at`, valid until `deadline`. */
function extend(at: number, deadline: number): HistoryEvent {
  return { op: 'extend', process: 'a', lock: 'L', at: ms(at), fence: 1, deadline: ms(deadline) };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'history-test-'));
  return () => rmSync(dir, { recursive: true, force: true });
});

describe('checkHistory', () => {
  it('accepts disjoint holds with increasing fences and an exact witness', () => {
    const verdict = checkHistory(
      [acquire('a', 10, 1), release('a', 20), acquire('b', 21, 2), write('b', 25, 2, true), release('b', 30)],
      { witness: { expected: 2, actual: 2 } },
    );
    expect(verdict).toMatchObject({ ok: true, intervals: 2, events: 5, overlaps: [], maxOverrunMs: 0 });
  });

  it('finds an overlap hidden behind a short hold, and measures the overrun', () => {
    const verdict = checkHistory([
      acquire('a', 10, 1),
      acquire('b', 20, 2),
      release('b', 30),
      acquire('c', 50, 3),
      release('c', 60),
      release('a', 100),
    ]);
    expect(verdict.ok).toBe(false);
    expect(verdict.overlaps.map((o) => [o.first.process, o.second.process])).toEqual([
      ['a', 'b'],
      ['a', 'c'],
    ]);
    expect(verdict.maxOverrunMs).toBe(10);
  });

  it('ends a belief at the deadline, at a loss, or at the last release of a re-entered hold', () => {
    expect(checkHistory([acquire('a', 10, 1, 40), release('a', 100), acquire('b', 50, 2)]).ok).toBe(true);
    const lost: HistoryEvent = { op: 'lost', process: 'a', lock: 'L', at: ms(30) };
    expect(checkHistory([acquire('a', 10, 1), lost, acquire('b', 50, 2)]).ok).toBe(true);
    const reentered = [acquire('a', 10, 1), acquire('a', 12, 1), release('a', 20), acquire('b', 30, 2)];
    expect(checkHistory(reentered).overlaps).toHaveLength(1);
    expect(checkHistory([...reentered, release('a', 25)]).ok).toBe(true);
  });

  it("a re-entry moves the hold's deadline to its own, as the lock moves validUntil on re-entry", () => {
    // a's first grant ends at 50, its re-entry at 30 runs to 130: b granted at 60 overlaps it.
    const longer = checkHistory([
      acquire('a', 10, 1, 50),
      acquire('a', 30, 1, 130),
      acquire('b', 60, 2),
      release('b', 70),
      release('a', 80),
      release('a', 90),
    ]);
    expect(longer.overlaps.map((o) => [o.first.process, o.second.process, o.first.end])).toEqual([
      ['a', 'b', ms(90)],
    ]);
    // A re-entry with a shorter lease ends the belief sooner; one renewed by a watchdog has no deadline.
    expect(checkHistory([acquire('a', 10, 1, 100), acquire('a', 30, 1, 40), acquire('b', 60, 2)]).ok).toBe(
      true,
    );
    const renewed = checkHistory([acquire('a', 10, 1, 50), acquire('a', 30, 1), acquire('b', 60, 2)]);
    expect(renewed.overlaps.map((o) => o.first.end)).toEqual([2n ** 63n]);
  });

  it('tolerates epsilon, and a hold never ended runs forever', () => {
    expect(checkHistory([acquire('a', 10, 1), release('a', 20.5), acquire('b', 20, 2)]).ok).toBe(true);
    expect(
      checkHistory([acquire('a', 10, 1), release('a', 20.5), acquire('b', 20, 2)], { epsilonMs: 0 }).ok,
    ).toBe(false);
    expect(checkHistory([acquire('a', 10, 1), acquire('b', 1_000_000, 2)]).overlaps).toHaveLength(1);
  });

  it('reports duplicate and regressed fences in grant order', () => {
    const verdict = checkHistory([
      acquire('a', 10, 5),
      release('a', 20),
      acquire('b', 30, 5),
      release('b', 40),
      acquire('c', 50, 4),
      release('c', 60),
    ]);
    expect(verdict.fenceIssues.map((issue) => issue.kind)).toEqual(['duplicate', 'regression']);
  });

  it('a stale write accepted after a newer fence is a violation, and stretches its hold into an overlap', () => {
    // Kleppmann: a checks its lease, pauses past it, and writes after b acquired and wrote.
    const unfenced = checkHistory([
      acquire('a', 10, 1, 20),
      acquire('b', 30, 2),
      write('b', 35, 2, true),
      release('b', 40),
      write('a', 45, 1, true),
    ]);
    expect(unfenced.staleWrites.map((event) => event.process)).toEqual(['a']);
    expect(unfenced.overlaps).toHaveLength(1);
    const fenced = checkHistory([
      acquire('a', 10, 1, 20),
      acquire('b', 30, 2),
      write('b', 35, 2, true),
      release('b', 40),
      write('a', 45, 1, false),
    ]);
    expect(fenced.ok).toBe(true);
  });

  it('a zombie write accepted after the loss or the release stretches the ended hold into an overlap', () => {
    // a's deadline passes at 100 and b is granted at 120; a's write still in flight lands at 160.
    for (const end of [lost('a', 150), release('a', 90)]) {
      const zombie = checkHistory([
        acquire('a', 0, 1, 100),
        acquire('b', 120, 2),
        end,
        write('a', 160, 1, true),
        release('b', 200),
      ]);
      expect(zombie.ok).toBe(false);
      expect(zombie.overlaps.map((o) => [o.first.process, o.second.process, o.first.end])).toEqual([
        ['a', 'b', ms(160)],
      ]);
      expect(zombie.maxOverrunMs).toBe(40);
    }
    const refused = [
      acquire('a', 0, 1, 100),
      acquire('b', 120, 2),
      lost('a', 150),
      write('a', 160, 1, false),
    ];
    expect(checkHistory(refused).ok).toBe(true);
  });

  it('a write accepted from a process that never held the lock is reported', () => {
    const verdict = checkHistory([acquire('b', 0, 2), write('a', 5, 1, true), release('b', 10)]);
    expect(verdict.ok).toBe(false);
    expect(verdict.unheldWrites.map((event) => event.process)).toEqual(['a']);
    expect(verdict.overlaps).toEqual([]);
    expect(checkHistory([acquire('b', 0, 2), write('a', 5, 1, false), release('b', 10)]).ok).toBe(true);
  });

  it('a grant whose deadline passed before it came back holds nothing', () => {
    // a's request was first at Redis (fence 1) but its reply came back after its validity.
    const verdict = checkHistory([
      acquire('b', 45, 2),
      acquire('a', 50, 1, 40),
      release('b', 60),
      release('a', 70),
    ]);
    expect(verdict).toMatchObject({ ok: true, intervals: 1, overlaps: [], fenceIssues: [] });
  });

  it('finds a fence regression across a hold without a fence', () => {
    const unfenced: HistoryEvent = { op: 'acquire', process: 'c', lock: 'L', at: ms(6) };
    const verdict = checkHistory([
      acquire('a', 0, 5),
      release('a', 5),
      unfenced,
      release('c', 7),
      acquire('b', 10, 4),
      release('b', 20),
    ]);
    expect(
      verdict.fenceIssues.map((issue) => [issue.kind, issue.previous.process, issue.next.process]),
    ).toEqual([['regression', 'a', 'b']]);
  });

  it('an extension moves the deadline, so an overlap inside the extended window is found', () => {
    // a's first deadline is 40; extended at 30 to 100, it still believes it holds when b is granted at 60.
    const verdict = checkHistory([
      acquire('a', 10, 1, 40),
      extend(30, 100),
      acquire('b', 60, 2),
      release('b', 70),
    ]);
    expect(verdict.ok).toBe(false);
    expect(verdict.overlaps.map((o) => [o.first.process, o.second.process, o.first.end])).toEqual([
      ['a', 'b', ms(100)],
    ]);
    // An extension to a shorter lease ends the belief earlier; one after a release revives nothing.
    expect(checkHistory([acquire('a', 10, 1, 100), extend(30, 50), acquire('b', 60, 2)]).ok).toBe(true);
    expect(
      checkHistory([acquire('a', 10, 1, 100), release('a', 20), extend(30, 200), acquire('b', 60, 2)]).ok,
    ).toBe(true);
    // A watchdog-renewed hold has no deadline to move: it runs until its release.
    const renewed: HistoryEvent = { op: 'acquire', process: 'a', lock: 'L', at: ms(10), fence: 1 };
    const stillRenewed = checkHistory([renewed, extend(30, 40), acquire('b', 60, 2), release('a', 80)]);
    expect(stillRenewed.overlaps.map((o) => o.first.end)).toEqual([ms(80)]);
  });

  it('an extension that came back after the loss stretches the ended hold, as a zombie write does; after a release it does not', () => {
    // a loses the lock at 20 and b is granted at 25; a's extension, sent before, still found
    // the key a's when it came back at 30, so both held it from 25 to 30.
    const late = checkHistory([
      acquire('a', 10, 1, 100),
      lost('a', 20),
      acquire('b', 25, 2),
      extend(30, 200),
    ]);
    expect(late.overlaps.map((o) => [o.first.process, o.second.process, o.first.end])).toEqual([
      ['a', 'b', ms(30)],
    ]);
    expect(late.maxOverrunMs).toBe(5);
    // A release that succeeded deleted the key: an extension answered after it ran before it.
    expect(
      checkHistory([acquire('a', 10, 1, 100), release('a', 20), acquire('b', 25, 2), extend(30, 200)]).ok,
    ).toBe(true);
    // Equal timestamps: an extension back at the instant of b's grant overlaps nothing.
    expect(
      checkHistory([acquire('a', 10, 1, 100), lost('a', 20), acquire('b', 25, 2), extend(25, 200)], {
        epsilonMs: 0,
      }).ok,
    ).toBe(true);
  });

  it('holds are told apart by owner: two owners of one process overlap, one owner in two processes re-enters', () => {
    const owned = (event: HistoryEvent, owner: string): HistoryEvent => ({ ...event, owner });
    const twoOwners = checkHistory([
      owned(acquire('a', 10, 1), 'o1'),
      owned(acquire('a', 20, 2), 'o2'),
      owned(release('a', 30), 'o2'),
      owned(release('a', 40), 'o1'),
    ]);
    expect(twoOwners.ok).toBe(false);
    expect(twoOwners.overlaps.map((o) => [o.first.owner, o.second.owner])).toEqual([['o1', 'o2']]);
    const handedOver = checkHistory([
      owned(acquire('a', 10, 1), 'o1'),
      owned(acquire('b', 20, 1), 'o1'),
      owned(release('b', 30), 'o1'),
      owned(release('a', 40), 'o1'),
    ]);
    expect(handedOver).toMatchObject({ ok: true, intervals: 1 });
  });

  it('counts lost updates of the witness', () => {
    expect(checkHistory([], { witness: { expected: 10, actual: 7 } })).toMatchObject({
      ok: false,
      lostUpdates: 3,
    });
  });

  it('refuses a bad epsilon by name', () => {
    expect(() => checkHistory([], { epsilonMs: -1 })).toThrow(
      'epsilonMs must be a finite number >= 0, got -1',
    );
  });
});

describe('HistoryRecorder and readHistory', () => {
  it('appends each event to its file as it happens; files of several processes merge', async () => {
    const a = new HistoryRecorder('a', { file: join(dir, 'a.jsonl') });
    const b = new HistoryRecorder('b', { file: join(dir, 'b.jsonl') });
    const lock = { key: 'L', fence: 1, validUntil: performance.now() + 1_000 };
    const grant = a.acquired(lock);
    expect(grant.deadline! - grant.at).toBeGreaterThan(ms(990));
    expect(grant.deadline! - grant.at).toBeLessThanOrEqual(ms(1_000));
    expect(readFileSync(join(dir, 'a.jsonl'), 'utf8').split('\n')).toHaveLength(2);
    a.wrote(lock, true, 'account');
    a.released(lock);
    expect(b.acquired({ ...lock, fence: 2 }, { renewed: true }).deadline).toBeUndefined();
    b.lost(lock);
    a.close();
    b.close();
    a.close();
    const merged = readHistory(dir);
    expect(merged).toHaveLength(5);
    expect(merged.filter((event) => event.process === 'a').map((event) => event.op)).toEqual([
      'acquire',
      'write',
      'release',
    ]);
    expect(merged[1]).toMatchObject({ resource: 'account', accepted: true, fence: 1 });
    expect(typeof merged[0]!.at).toBe('bigint');
    expect(readHistory(join(dir, 'b.jsonl'))).toEqual(b.events);
  });

  it('records the owner, and an extension with the new validUntil of the handle, and reads them back', () => {
    const recorder = new HistoryRecorder('w1', { file: join(dir, 'w1.jsonl') });
    const lock = { key: 'L', owner: 'o1', fence: 3, validUntil: performance.now() + 100 };
    const grant = recorder.acquired(lock);
    lock.validUntil += 5_000;
    const extension = recorder.extended(lock);
    expect(extension).toMatchObject({ op: 'extend', lock: 'L', owner: 'o1', fence: 3 });
    expect(extension.deadline! - grant.deadline!).toBeGreaterThan(ms(4_990));
    recorder.wrote(lock, true);
    recorder.released(lock);
    recorder.lost(lock);
    recorder.close();
    const read = readHistory(dir);
    expect(read).toEqual(recorder.events);
    expect(read.map((event) => event.owner)).toEqual(['o1', 'o1', 'o1', 'o1', 'o1']);
  });

  it('still parses histories recorded without owners or extensions', () => {
    const old = [
      '{"op":"acquire","process":"a","lock":"L","at":"10","fence":1,"deadline":"40"}',
      '{"op":"release","process":"a","lock":"L","at":"20"}',
    ].join('\n');
    const events = parseEvents(old);
    expect(events[0]).toEqual({ op: 'acquire', process: 'a', lock: 'L', at: 10n, fence: 1, deadline: 40n });
    expect(checkHistory(events).ok).toBe(true);
  });

  it('keeps events in memory without a file, and refuses a nameless process', () => {
    const recorder = new HistoryRecorder('w1');
    recorder.record({ op: 'lost', lock: 'x' });
    expect(recorder.events).toMatchObject([{ op: 'lost', process: 'w1', lock: 'x' }]);
    expect(() => new HistoryRecorder('')).toThrow('process must be a non-empty string, got ""');
  });

  it('names the line that is not an event', () => {
    expect(() => parseEvents('{"op":"acquire","process":"a","lock":"L","at":"1"}\nnope', 'h.jsonl')).toThrow(
      'h.jsonl line 2 is not JSON: nope',
    );
    expect(() => parseEvents('{"op":"jump","process":"a","lock":"L","at":"1"}')).toThrow(
      'line 1 is not a history event',
    );
  });
});

describe('assertHistory', () => {
  it('returns the verdict of a good history and writes nothing', () => {
    expect(assertHistory([acquire('a', 1, 1), release('a', 2)], { dir }).ok).toBe(true);
    expect(readHistory(dir)).toEqual([]);
  });

  it('writes a failing history to a file the error names, events then the verdict', () => {
    const events = [acquire('b', 5, 2), acquire('a', 1, 1)];
    let error: unknown;
    try {
      assertHistory(events, { dir, name: 'S1 contention' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(HistoryViolationError);
    const { file, verdict, message } = error as HistoryViolationError;
    expect(file.startsWith(join(dir, 'S1_contention-'))).toBe(true);
    expect(message).toContain('1 overlaps');
    expect(message).toContain(file);
    expect(verdict.overlaps).toHaveLength(1);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(parseEvents(lines.slice(0, 2).join('\n')).map((event) => event.process)).toEqual(['a', 'b']);
    expect(JSON.parse(lines[2]!).verdict).toContain('1 overlaps');
  });
});
