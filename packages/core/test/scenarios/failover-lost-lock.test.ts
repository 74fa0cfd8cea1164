import {
  createLocker,
  type Lock,
  type LockLostError,
  type LockProtocol,
  ReplicationError,
  tokenProtocol,
} from '@lock/core';
import { assertHistory, checkHistory, HistoryRecorder, waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { reportFigures } from './support/figures.js';
import { startPartitionedSentinel } from './support/partitioned-sentinel.js';
import { rounds, timeLimit } from './support/tier.js';

const TRIALS = rounds(1, 5);
const KEY = 's11:order';

/** The token protocol without its fence counter, so no backend stamps it: fences without epochs. */
function unstamped(): LockProtocol {
  const { fenceCounter: _, ...protocol } = tokenProtocol();
  return protocol;
}

/**
 * S11 + S13: the replication link is cut (proxy blackhole), A acquires on the master, the master
 * is killed (-9) and the sentinels promote the replica, then B acquires on the new master.
 * One fence was handed out (and replicated) before the cut, so both counters start equal.
 */
async function crashAfterCut(
  replication: false | { replicas: number; timeout: number },
  protocol: LockProtocol = tokenProtocol(),
) {
  const setup = await startPartitionedSentinel();
  try {
    const a = createLocker({ redis: setup.client(), replication, protocol });
    const recorderA = new HistoryRecorder('A');
    const recorderB = new HistoryRecorder('B');
    const warmup = await a.acquire(KEY, { ttl: 30_000 });
    await warmup.release();
    await setup.synced();
    setup.link.blackhole();
    let refused: unknown;
    let lockA: Lock | undefined;
    try {
      lockA = await a.acquire(KEY, { ttl: 30_000, wait: 0 });
      recorderA.acquired(lockA);
    } catch (error) {
      refused = error;
    }
    await setup.master.kill();
    const promotion = await setup.promoted();
    const b = createLocker({ redis: setup.client(), replication: false, protocol });
    const lockB = await b.acquire(KEY, { ttl: 30_000, wait: 5_000 });
    recorderB.acquired(lockB);
    await lockB.release();
    await b.close();
    // A's client reconnects to the promoted replica and reads its run id: with or without a
    // fence counter to stamp, the backend sees the master change.
    const losses: string[] = [];
    if (lockA) {
      const held = lockA;
      await waitFor('A to notice the master change', async () => held.signal.aborted);
      losses.push((held.signal.reason as LockLostError).reason);
    }
    await a.close();
    return {
      events: [...recorderA.events, ...recorderB.events],
      lockA,
      lockB,
      refused,
      warmup,
      promotion,
      losses,
    };
  } finally {
    await setup.stop();
  }
}

describe(`S11/S13: master crash after the replication link was cut, Sentinel promotion (${TRIALS} trials each)`, () => {
  it(
    'without WAIT and without fence epochs (✗-expected): two holders and a repeated fence, both detected; A still learns of the failover',
    async () => {
      for (let trial = 0; trial < TRIALS; trial++) {
        const { events, lockA, lockB, refused, promotion, losses } = await crashAfterCut(false, unstamped());
        expect(refused).toBeUndefined();
        const verdict = checkHistory(events);
        reportFigures('S11 without WAIT', {
          trial,
          'promotion ms': promotion,
          overlaps: verdict.overlaps.length,
        });
        expect(verdict.overlaps).toHaveLength(1);
        expect(verdict.fenceIssues.map((issue) => issue.kind)).toEqual(['duplicate']);
        expect(lockB.fence).toBe(lockA!.fence);
        expect(losses).toEqual(['failover']);
      }
    },
    timeLimit(30_000, 300_000),
  );

  it(
    'without WAIT, fences stamped with their master: two holders still (✗-expected), but B’s fence is above A’s and A learns of the failover',
    async () => {
      for (let trial = 0; trial < TRIALS; trial++) {
        const { events, lockA, lockB, refused, losses } = await crashAfterCut(false);
        expect(refused).toBeUndefined();
        const verdict = checkHistory(events);
        reportFigures('S13 epoch without WAIT', {
          trial,
          overlaps: verdict.overlaps.length,
          'fence A': lockA!.fence,
          'fence B': lockB.fence,
          'A lost as': losses.join(','),
        });
        expect(verdict.overlaps).toHaveLength(1);
        expect(verdict.fenceIssues).toEqual([]);
        expect(lockB.fence).toBeGreaterThan(lockA!.fence);
        expect(losses).toEqual(['failover']);
      }
    },
    timeLimit(30_000, 300_000),
  );

  it(
    'with WAIT 1 gating: A is refused (ReplicationError) and released, B’s fence is above every confirmed one',
    async () => {
      for (let trial = 0; trial < TRIALS; trial++) {
        const { events, refused, lockB, warmup } = await crashAfterCut({ replicas: 1, timeout: 200 });
        expect(refused).toBeInstanceOf(ReplicationError);
        expect((refused as ReplicationError).confirmed).toBe(0);
        expect(assertHistory(events, { name: 'S11-wait' }).intervals).toBe(1);
        expect(lockB.fence).toBeGreaterThan(warmup.fence);
      }
    },
    timeLimit(30_000, 300_000),
  );
});
