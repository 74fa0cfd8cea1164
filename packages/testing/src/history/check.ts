import type { HistoryEvent } from './events.js';

/**
 * A believed-held interval: from a grant to the first of release, loss and deadline, stretched
 * to its last accepted write or late extension.
 */
export interface HeldInterval {
  readonly process: string;
  /** The owner that held it, when its grant recorded one. */
  readonly owner?: string;
  readonly lock: string;
  readonly start: bigint;
  /** When the holder stopped believing it held the lock (release, loss or deadline). */
  readonly believedEnd: bigint;
  /**
   * The end of its effects: `believedEnd`, or later when the resource accepted a write of this
   * holder, or an extension of it came back, after it and before the holder's next grant (a
   * zombie's write lands there).
   */
  readonly end: bigint;
  readonly fence: number | undefined;
}

/** Two holders of one lock at once. */
export interface Overlap {
  readonly lock: string;
  readonly first: HeldInterval;
  readonly second: HeldInterval;
  /** How long (ns) the first holder's interval ran past the second's grant. */
  readonly overrun: bigint;
}

/** A fence that did not increase from one holder of a lock to the next. */
export interface FenceIssue {
  readonly kind: 'duplicate' | 'regression';
  readonly previous: HeldInterval;
  readonly next: HeldInterval;
}

/** What `checkHistory` found. `ok` is true when no list has an entry and no update was lost. */
export interface HistoryVerdict {
  readonly ok: boolean;
  readonly events: number;
  readonly intervals: number;
  readonly overlaps: readonly Overlap[];
  /** The longest overrun of any overlap, in ms (0 without overlaps): the figure to report. */
  readonly maxOverrunMs: number;
  readonly fenceIssues: readonly FenceIssue[];
  /** Writes a resource accepted although it had already accepted one with a higher fence. */
  readonly staleWrites: readonly HistoryEvent[];
  /**
   * Writes a resource accepted from a process that had never been granted their lock: no hold
   * exists to stretch over them, so nothing else in the verdict would show them.
   */
  readonly unheldWrites: readonly HistoryEvent[];
  /** `witness.expected − witness.actual`, or 0 without a witness. */
  readonly lostUpdates: number;
}

/** Options of `checkHistory`. */
export interface CheckHistoryOptions {
  /** Overlaps up to this many ms are tolerated (timestamps are taken around, not inside, Redis calls). Default: `1`. */
  epsilonMs?: number;
  /**
   * A witness counter: every hold incremented it with an unguarded read-modify-write, so a final
   * count below `expected` proves two holders interleaved (Jepsen's lock-set). Default: none.
   */
  witness?: { expected: number; actual: number };
}

/**
 * Checks a lock history (every process's events, merged): believed-held intervals of one lock
 * must not overlap, fences of successive holders must strictly increase, no resource may accept
 * a write carrying a lower fence than one it already accepted or a write from a process never
 * granted the lock, and the witness must be exact.
 */
export function checkHistory(
  events: readonly HistoryEvent[],
  options: CheckHistoryOptions = {},
): HistoryVerdict {
  const epsilonMs = options.epsilonMs ?? 1;
  if (!(epsilonMs >= 0 && Number.isFinite(epsilonMs))) {
    throw new RangeError(`epsilonMs must be a finite number >= 0, got ${epsilonMs}`);
  }
  const epsilon = BigInt(Math.round(epsilonMs * 1e6));
  const ordered = [...events].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const { intervals, unheldWrites } = heldIntervals(ordered);
  const overlaps: Overlap[] = [];
  const fenceIssues: FenceIssue[] = [];
  for (const held of groupBy(intervals, (interval) => interval.lock).values()) {
    held.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    // Each interval is compared with the one reaching furthest so far, so a long hold is not
    // hidden behind a short one that started after it.
    let reaching: HeldInterval | undefined;
    // A hold without a fence says nothing about order, so it must not hide a regression across it.
    let fenced: HeldInterval | undefined;
    for (const interval of held) {
      if (reaching && holderOf(reaching) !== holderOf(interval) && reaching.end - interval.start > epsilon) {
        overlaps.push({
          lock: interval.lock,
          first: reaching,
          second: interval,
          overrun: min(reaching.end, interval.end) - interval.start,
        });
      }
      if (!reaching || interval.end > reaching.end) reaching = interval;
      if (interval.fence === undefined) continue;
      if (fenced?.fence !== undefined && interval.fence <= fenced.fence) {
        fenceIssues.push({
          kind: interval.fence === fenced.fence ? 'duplicate' : 'regression',
          previous: fenced,
          next: interval,
        });
      }
      fenced = interval;
    }
  }
  const staleWrites = staleAccepted(ordered);
  const lostUpdates = options.witness ? options.witness.expected - options.witness.actual : 0;
  const maxOverrun = overlaps.reduce((most, overlap) => max(most, overlap.overrun), 0n);
  return {
    ok:
      overlaps.length === 0 &&
      fenceIssues.length === 0 &&
      staleWrites.length === 0 &&
      unheldWrites.length === 0 &&
      lostUpdates === 0,
    events: events.length,
    intervals: intervals.length,
    overlaps,
    maxOverrunMs: Number(maxOverrun) / 1e6,
    fenceIssues,
    staleWrites,
    unheldWrites,
    lostUpdates,
  };
}

/**
 * Pairs each holder's grants with what ended them. Re-entries (a grant while already held)
 * deepen the hold and move its deadline; only the last release ends it. An extension moves the
 * hold's deadline too, and one back after the hold was lost stretches it as a zombie write does.
 * A hold never ended (the process died or the log stops) runs to its deadline, or forever
 * without one. An accepted write stretches the holder's current hold, else its last ended one: a
 * zombie's write that lands after the loss or release is exactly the effect that outlives a
 * belief. A grant whose deadline had passed before it came back was never believed, so unless
 * a write or an extension stretched it, it holds nothing.
 */
function heldIntervals(ordered: readonly HistoryEvent[]): {
  intervals: HeldInterval[];
  unheldWrites: HistoryEvent[];
} {
  const intervals: { -readonly [K in keyof HeldInterval]: HeldInterval[K] }[] = [];
  const unheldWrites: HistoryEvent[] = [];
  const open = new Map<
    string,
    { grant: HistoryEvent; depth: number; deadline: bigint | undefined; lastWrite: bigint | undefined }
  >();
  const ended = new Map<string, (typeof intervals)[number]>();
  const close = (id: string, at: bigint) => {
    const hold = open.get(id);
    if (!hold) return;
    open.delete(id);
    const { grant, deadline, lastWrite } = hold;
    const believedEnd = deadline !== undefined && deadline < at ? deadline : at;
    const interval = {
      process: grant.process,
      ...(grant.owner === undefined ? {} : { owner: grant.owner }),
      lock: grant.lock,
      start: grant.at,
      believedEnd,
      end: lastWrite !== undefined && lastWrite > believedEnd ? lastWrite : believedEnd,
      fence: grant.fence,
    };
    intervals.push(interval);
    ended.set(id, interval);
  };
  /** Holders whose last hold ended by a loss: the key may still have been theirs after it. */
  const endedByLoss = new Set<string>();
  /** Stretches the holder's last ended hold to `at`; false when it never had one. */
  const stretch = (id: string, at: bigint): boolean => {
    const last = ended.get(id);
    if (last) last.end = max(last.end, at);
    return last !== undefined;
  };
  for (const event of ordered) {
    const id = `${holderOf(event)}\u0000${event.lock}`;
    const hold = open.get(id);
    if (event.op === 'acquire') {
      if (hold) {
        hold.depth += 1;
        // The lock moves a re-entered hold's validUntil to the re-entry's, later or sooner, and
        // a re-entry renewed by a watchdog makes the whole hold renewed.
        if (hold.deadline !== undefined) hold.deadline = event.deadline;
      } else open.set(id, { grant: event, depth: 1, deadline: event.deadline, lastWrite: undefined });
    } else if (event.op === 'extend') {
      // An extension that came back after the deadline still found the key this owner's, so a
      // grant to another holder in that gap is itself a violation: the hold runs on through it.
      // A hold without a deadline is renewed by its watchdog and keeps having none. One that
      // came back after a loss (sent before it) found the key this owner's, so like a zombie
      // write it stretches the ended hold to its return, not to its new deadline: the holder no
      // longer believes. After a release it proves nothing: it ran before the release deleted
      // the key, and only its answer came late.
      if (hold?.deadline !== undefined) hold.deadline = event.deadline;
      else if (!hold && endedByLoss.has(id)) stretch(id, event.at);
    } else if (event.op === 'release') {
      if (hold && --hold.depth === 0) {
        close(id, event.at);
        endedByLoss.delete(id);
      }
    } else if (event.op === 'lost') {
      close(id, event.at);
      endedByLoss.add(id);
    } else if (event.accepted) {
      if (hold) hold.lastWrite = event.at;
      else if (!stretch(id, event.at)) unheldWrites.push(event);
    }
  }
  const never = 2n ** 63n;
  for (const id of [...open.keys()]) close(id, never);
  return { intervals: intervals.filter((interval) => interval.end > interval.start), unheldWrites };
}

function staleAccepted(ordered: readonly HistoryEvent[]): HistoryEvent[] {
  const highest = new Map<string, number>();
  const stale: HistoryEvent[] = [];
  for (const event of ordered) {
    if (event.op !== 'write' || !event.accepted || event.fence === undefined) continue;
    const resource = event.resource ?? event.lock;
    const seen = highest.get(resource);
    if (seen !== undefined && event.fence < seen) stale.push(event);
    else highest.set(resource, event.fence);
  }
  return stale;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

// Core counts re-entry per owner, in any process; histories without owners know only processes.
function holderOf(event: Pick<HistoryEvent, 'process' | 'owner'>): string {
  return event.owner === undefined ? `process\u0000${event.process}` : `owner\u0000${event.owner}`;
}

// Math.min and Math.max take no bigints.
function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

function max(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
