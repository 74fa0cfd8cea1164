import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRedlock, type Lock, tokenProtocol } from '@lock/core';
import {
  assertHistory,
  checkHistory,
  HistoryRecorder,
  readHistory,
  startMasters,
  startProxy,
  type TcpProxy,
  waitFor,
} from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { type ScriptProcess, startScript } from '../support/script-process.js';
import { reportFigures } from './support/figures.js';
import { rounds, timeLimit } from './support/tier.js';

const KEY = 's10';
/** The lock hash each master keeps for `KEY` (token protocol, prefix `lock:`). */
const LOCK_KEY = `{lock:${KEY}}`;
/** A's lease in the rounds where B takes the lock during A's pause. */
const TTL = 400;
/** A's lease in the rounds where the pause is shorter than the lease. */
const LONG_TTL = 2_000;
const SHORT_PAUSE = 400;
/**
 * How long the proxies in front of A's masters may hold A's replies back: longer than any round.
 * Each round lets them through only once A is frozen, so the pause lands between A's SETs and its
 * reading of their replies.
 */
const HOLD_REPLIES = 60_000;
const ROUNDS = rounds(10, 30);
const SHORT_ROUNDS = rounds(3, 10);

/** validity = ttl − ⌊ttl × 0.01⌋ − 2 (RedLock's drift allowance), counted from the attempt's start. */
const validityOf = (ttl: number) => ttl - Math.floor(ttl * 0.01) - 2;

type Reply =
  | {
      granted: true;
      startedAt: number;
      grantedAt: number;
      validUntil: number;
      validUntilNs: string;
      fence: number;
    }
  | { granted: false; error: string };

interface Setup {
  readonly a: ScriptProcess;
  /** Direct connections to the five masters (the harness's and B's). */
  readonly admins: readonly Redis[];
  readonly proxies: readonly TcpProxy[];
  readonly history: string;
  stop(): Promise<void>;
}

/** Five masters; A reaches them through proxies, which each round holds its replies back. */
async function setUp(broken: boolean): Promise<Setup> {
  const masters = await startMasters(5);
  const proxies = await Promise.all(masters.servers.map((server) => startProxy({ target: server })));
  const dir = mkdtempSync(join(tmpdir(), 's10-'));
  const history = join(dir, 'a.jsonl');
  const a = startScript(new URL('./support/paused-redlock.ts', import.meta.url), {
    masters: proxies.map((proxy) => `redis://${proxy.host}:${proxy.port}`),
    key: KEY,
    // Larger than any pause here: A reads every reply and judges the attempt by its validity.
    nodeTimeout: 10_000,
    history,
    id: 'A',
    broken,
  });
  expect(JSON.parse(await a.line())).toEqual({ ready: true });
  return {
    a,
    admins: masters.clients(),
    proxies,
    history,
    async stop() {
      await a.stop();
      await Promise.all(proxies.map((proxy) => proxy.stop()));
      await masters.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether every master answers `expected` to EXISTS on the lock key. */
async function lockKeyOnAll(admins: readonly Redis[], expected: 0 | 1): Promise<boolean> {
  return (await Promise.all(admins.map((admin) => admin.exists(LOCK_KEY)))).every((n) => n === expected);
}

/**
 * Starts an attempt of A with its replies held back, freezes A (SIGSTOP) once its SETs are on all
 * five masters, then lets the replies through: A reads them only when it resumes. Answers the
 * hrtime (ns) by which every SET had arrived, so A's attempt had started.
 */
async function pauseAfterSets(setup: Setup, ttl: number): Promise<bigint> {
  const { a, admins, proxies } = setup;
  await waitFor('the lock to be free on every master', () => lockKeyOnAll(admins, 0), {
    timeout: 10_000,
    interval: 5,
  });
  for (const proxy of proxies) proxy.delay({ upstream: 0, downstream: HOLD_REPLIES });
  a.send(JSON.stringify({ ttl }));
  await waitFor('A’s SETs on all five masters', () => lockKeyOnAll(admins, 1), {
    timeout: 10_000,
    interval: 5,
  });
  a.pause();
  const setsSeen = process.hrtime.bigint();
  for (const proxy of proxies) proxy.pass();
  return setsSeen;
}

/** The owner each master records for the lock (null where it is free). */
async function owners(admins: readonly Redis[]): Promise<(string | null)[]> {
  const protocol = tokenProtocol();
  return Promise.all(admins.map(async (admin) => (await protocol.inspect(admin, `lock:${KEY}`)).owner));
}

/** One round: A frozen after its SETs, B acquires meanwhile and holds while A resumes and answers. */
async function pausedPastTheLease(
  setup: Setup,
  b: ReturnType<typeof createRedlock>,
  recorderB: HistoryRecorder,
) {
  await pauseAfterSets(setup, TTL);
  const stoppedAt = performance.now();
  const lockB: Lock = await b.acquire(KEY, { ttl: 10_000, wait: 10_000 });
  recorderB.acquired(lockB);
  const before = await owners(setup.admins);
  const frozen = performance.now() - stoppedAt;
  setup.a.resume();
  const reply = JSON.parse(await setup.a.line((line) => line.startsWith('{"granted"'))) as Reply;
  const after = await owners(setup.admins);
  setup.a.send('release');
  await setup.a.line((line) => line.startsWith('{"released"'));
  recorderB.released(lockB);
  await lockB.release();
  return { frozen, reply, before, after, ownerB: lockB.owner };
}

/** Runs `ROUNDS` paused rounds with A's variant, and returns them with the merged history. */
async function pausedRounds(broken: boolean) {
  const setup = await setUp(broken);
  const b = createRedlock({ clients: setup.admins, retry: { base: 10, max: 30 } });
  const recorderB = new HistoryRecorder('B');
  try {
    const results = [];
    for (let round = 0; round < ROUNDS; round++) results.push(await pausedPastTheLease(setup, b, recorderB));
    await setup.a.finish();
    return { results, events: [...readHistory(setup.history), ...recorderB.events] };
  } finally {
    await b.close();
    await setup.stop();
  }
}

describe(`S10: a RedLock client frozen (SIGSTOP) right after sending its SETs, 5 masters, ${ROUNDS} rounds`, () => {
  it(
    'frozen past its lease while B acquires: A hands out no handle, releases, B’s keys stay, the history checks clean',
    async () => {
      const { results, events } = await pausedRounds(false);
      expect(results).toHaveLength(ROUNDS);
      // A's own majority granted it, only read past the validity: not busy as far as A can tell.
      expect(results.map((result) => result.reply)).toEqual(
        results.map(() => ({ granted: false, error: 'QuorumError' })),
      );
      // B held a majority before A resumed, so A's keys had expired there and its lease was over;
      // A's answer removed nothing of B's and left nothing of A's.
      for (const { before, after, ownerB } of results) {
        expect(before.filter((owner) => owner === ownerB).length).toBeGreaterThanOrEqual(3);
        // Where B held, B still holds (A's keys that had not expired yet when B won may be gone).
        expect(after.map((owner, i) => (before[i] === ownerB ? owner : 'not B’s'))).toEqual(
          before.map((owner) => (owner === ownerB ? ownerB : 'not B’s')),
        );
        expect(after.filter((owner) => owner !== ownerB && owner !== null)).toEqual([]);
      }
      const verdict = assertHistory(events, { name: 'S10' });
      expect(verdict.intervals).toBe(ROUNDS);
      reportFigures('S10 paused past the lease', {
        rounds: ROUNDS,
        'handles handed out': results.filter((result) => result.reply.granted).length,
        'B’s keys removed': results.filter(({ before, after, ownerB }) =>
          before.some((owner, i) => owner === ownerB && after[i] !== ownerB),
        ).length,
        overlaps: verdict.overlaps.length,
        'frozen ms min': Math.min(...results.map((result) => result.frozen)),
        'frozen ms max': Math.max(...results.map((result) => result.frozen)),
        ttl: TTL,
      });
    },
    timeLimit(30_000, 120_000),
  );

  it(
    `frozen for less than its lease (${SHORT_PAUSE} ms of ${LONG_TTL}): the handle’s validity counts the pause from the attempt’s start`,
    async () => {
      const setup = await setUp(false);
      const replies: Reply[] = [];
      const setsSeen: bigint[] = [];
      try {
        for (let round = 0; round < SHORT_ROUNDS; round++) {
          setsSeen.push(await pauseAfterSets(setup, LONG_TTL));
          await new Promise((resolve) => setTimeout(resolve, SHORT_PAUSE));
          setup.a.resume();
          replies.push(JSON.parse(await setup.a.line((line) => line.startsWith('{"granted"'))) as Reply);
          setup.a.send('release');
          await setup.a.line((line) => line.startsWith('{"released"'));
        }
      } finally {
        await setup.stop();
      }
      const grants = replies.flatMap((reply) => (reply.granted ? [reply] : []));
      expect(grants).toHaveLength(SHORT_ROUNDS);
      const leftAtGrant = grants.map((grant) => grant.validUntil - grant.grantedAt);
      // The attempt started before its SETs were seen on the masters, so a validity counted from
      // its start ends at most ttl − drift after that (one clock: CLOCK_MONOTONIC, both processes).
      const validity = BigInt(validityOf(LONG_TTL) * 1e6);
      const beyond = grants.filter(
        (grant, round) => BigInt(grant.validUntilNs) > setsSeen[round]! + validity,
      );
      expect(beyond).toEqual([]);
      expect(leftAtGrant.filter((ms) => ms <= 0)).toEqual([]);
      // The pause (and the replies' delay) came off the handle's validity.
      expect(leftAtGrant.filter((ms) => ms > validityOf(LONG_TTL) - SHORT_PAUSE)).toEqual([]);
      reportFigures('S10 paused within the lease', {
        rounds: SHORT_ROUNDS,
        'handles with expired validity': leftAtGrant.filter((ms) => ms <= 0).length,
        'validity left at grant ms (max)': Math.max(...leftAtGrant),
        'validUntil − attempt start ms (max)': Math.max(
          ...grants.map((grant) => grant.validUntil - grant.startedAt),
        ),
        'ttl − drift': validityOf(LONG_TTL),
      });
    },
    timeLimit(30_000, 120_000),
  );

  it(
    '(✗-expected) a client counting validity from the replies believes it holds while B does: the checker reports every round',
    async () => {
      const { results, events } = await pausedRounds(true);
      expect(results.map((result) => result.reply.granted)).toEqual(results.map(() => true));
      // Epsilon 0: A's belief starts while B holds, and B lets go only after A was told to.
      const verdict = checkHistory(events, { epsilonMs: 0 });
      expect(verdict.ok).toBe(false);
      expect(verdict.overlaps).toHaveLength(ROUNDS);
      expect(verdict.overlaps.every((overlap) => overlap.first.process === 'B')).toBe(true);
      reportFigures('S10 broken (validity from the replies)', {
        rounds: ROUNDS,
        'false acquisitions': results.filter((result) => result.reply.granted).length,
        'overlaps detected': verdict.overlaps.length,
        'max overrun ms': verdict.maxOverrunMs,
      });
    },
    timeLimit(30_000, 120_000),
  );
});
