import { createRedlock, type Lock } from '@lock/core';
import {
  assertHistory,
  checkHistory,
  createSkewClock,
  type HistoryEvent,
  HistoryRecorder,
  type RedisServerOptions,
  skewClockUnavailable,
  waitFor,
} from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { type FiveMasters, startFiveMasters } from './support/five-masters.js';

const TTL = 10_000;
/**
 * Far above the default 250 ms: the first acquisition on a fresh master takes several round trips
 * (script loads, the fence's seed), and on a loaded CI host those overran 250 ms on A's masters
 * (QuorumError: 0 agreed, 5 timed out). No master is silent here (see `FiveMasters.clientsA`),
 * so it costs no wait; it is below the validity, which a grant must still be inside.
 */
const NODE_TIMEOUT = TTL / 2;
const KEY = 'kleppmann-1';

/**
 * A takes the lock on masters {0, 1, 2} (3 and 4 unreachable for it); then `fault` makes master 2
 * forget it; then B, reaching every master, tries. Returns the merged history and B's lock.
 */
async function majorityThenFault(
  middle: RedisServerOptions,
  fault: (masters: FiveMasters, lockA: Lock) => Promise<void>,
): Promise<{ events: HistoryEvent[]; lockA: Lock; lockB: Lock | null }> {
  const masters = await startFiveMasters(middle);
  try {
    const a = createRedlock({ clients: masters.clientsA, nodeTimeout: NODE_TIMEOUT });
    const b = createRedlock({ clients: masters.clientsB, nodeTimeout: NODE_TIMEOUT });
    const recorderA = new HistoryRecorder('A');
    const recorderB = new HistoryRecorder('B');
    const lockA = await a.acquire(KEY, { ttl: TTL, wait: 0 });
    recorderA.acquired(lockA);
    await fault(masters, lockA);
    const lockB = await b.tryAcquire(KEY, { ttl: TTL });
    if (lockB) recorderB.acquired(lockB);
    await lockB?.release();
    return { events: [...recorderA.events, ...recorderB.events], lockA, lockB };
  } finally {
    await masters.stop();
  }
}

/** Restarts master 2 and returns once B's client reaches it again. */
async function restartMiddle(masters: FiveMasters): Promise<void> {
  await masters.servers[2]!.restart();
  await waitFor(
    'B’s client to reach the restarted master',
    async () => (await masters.clientsB[2]!.ping()) === 'PONG',
  );
}

describe('S18: a RedLock master restarts while A holds a bare majority', () => {
  it('restarted at once without persistence (✗-expected): B gets {2, 3, 4} and the overlap is detected', async () => {
    const { events, lockB } = await majorityThenFault({}, restartMiddle);
    expect(lockB).not.toBeNull();
    const verdict = checkHistory(events);
    expect(verdict.overlaps).toHaveLength(1);
  });

  it(
    'restarted without persistence only after the longest lease (delayed restart): B gets the lock after A’s validity, no overlap',
    async () => {
      const { events, lockA, lockB } = await majorityThenFault({}, async (masters, held) => {
        await masters.servers[2]!.kill();
        // Down for as long as any lock granted before the crash can be valid.
        await waitFor('A’s validity to end', async () => performance.now() > held.validUntil, {
          timeout: 2 * TTL,
          interval: 100,
        });
        await restartMiddle(masters);
      });
      expect(lockB).not.toBeNull();
      expect(lockB!.fence).toBeGreaterThan(lockA.fence);
      expect(assertHistory(events, { name: 'S18-delayed' }).intervals).toBe(2);
    },
    3 * TTL,
  );

  it('restarted with AOF appendfsync always: the lock survives and B is refused', async () => {
    const { events, lockB } = await majorityThenFault({ persistence: true }, restartMiddle);
    expect(lockB).toBeNull();
    expect(assertHistory(events, { name: 'S18-aof' }).intervals).toBe(1);
  });
});

// Without a C compiler the shim cannot be built: skipped with the reason printed, except in CI
// (CI=true), where the test runs and fails on the missing compiler (no skipped tests in CI).
const missing = skewClockUnavailable();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`skipping S19 (clock jump on a RedLock master): ${missing}`);

describe.skipIf(skip)(
  'S19: the wall clock of a RedLock master jumps ahead while A holds a bare majority',
  () => {
    it('(✗-expected) the key expires early on that master, B gets {2, 3, 4}, and the overlap is detected', async () => {
      const clock = createSkewClock(0);
      try {
        const { events, lockB } = await majorityThenFault({ env: clock.env }, async (masters) => {
          clock.set(2 * TTL);
          const jumped = masters.clientsB[2]!;
          await waitFor(
            'the lock to expire on the jumped master',
            async () => (await jumped.exists(`{lock:${KEY}}`)) === 0,
            { timeout: 5_000 },
          );
        });
        expect(lockB).not.toBeNull();
        expect(checkHistory(events).overlaps).toHaveLength(1);
      } finally {
        clock.remove();
      }
    });
  },
);
