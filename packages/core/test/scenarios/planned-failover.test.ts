import { createLocker, type Lock, ReplicationError } from '@lock/core';
import { assertHistory, checkHistory, HistoryRecorder, startSentinel } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { reportFigures } from './support/figures.js';
import { timeLimit } from './support/tier.js';

/**
 * S12: a client stays connected to the master (as clients that have not noticed a switch do)
 * and keeps taking locks while `SENTINEL FAILOVER` promotes the replica; the old master goes on
 * acknowledging for seconds. Afterwards client B, through the sentinels, tries every lock A
 * believes it holds: each one B gets is a lost lock, and two holders.
 */
async function lockThroughFailover(replication: false | { replicas: number; timeout: number }) {
  const setup = await startSentinel({ replicas: 1, sentinels: 3 });
  try {
    const old = await setup.master();
    const direct = new Redis(old.redisOptions);
    direct.on('error', () => {});
    await direct.ping();
    const a = createLocker({ redis: direct, replication });
    const recorderA = new HistoryRecorder('A');
    const held: Lock[] = [];
    let refused = 0;
    let running = true;
    const writer = (async () => {
      for (let i = 0; running; i++) {
        try {
          const lock = await a.acquire(`s12:${i}`, { ttl: 60_000, wait: 0 });
          recorderA.acquired(lock);
          held.push(lock);
        } catch (error) {
          if (!(error instanceof ReplicationError)) throw error;
          refused += 1;
        }
      }
    })();
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await setup.failover();
    const switched = performance.now() - started;
    // The window: the old master keeps answering after the switch.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    running = false;
    await writer;
    const b = createLocker({ redis: setup.client(), replication: false });
    const recorderB = new HistoryRecorder('B');
    for (const lock of held) {
      const taken = await b.tryAcquire(lock.key, { ttl: 60_000 });
      if (taken) recorderB.acquired(taken);
    }
    await b.close();
    direct.disconnect();
    return {
      events: [...recorderA.events, ...recorderB.events],
      acknowledged: held.length,
      refused,
      switched,
    };
  } finally {
    await setup.stop();
  }
}

describe('S12: SENTINEL FAILOVER while a client keeps locking on the old master', () => {
  it(
    'without WAIT (✗-expected): locks acknowledged by the old master are lost, and the overlaps are detected',
    async () => {
      const { events, acknowledged, switched } = await lockThroughFailover(false);
      const verdict = checkHistory(events);
      reportFigures('S12 without WAIT', {
        acknowledged,
        lost: verdict.overlaps.length,
        'switch ms': switched,
      });
      expect(acknowledged).toBeGreaterThan(0);
      expect(verdict.overlaps.length).toBeGreaterThan(0);
    },
    timeLimit(60_000, 120_000),
  );

  it(
    'with WAIT 1 gating: 0 WAIT-confirmed locks lost; the unconfirmed ones were refused',
    async () => {
      const { events, acknowledged, refused, switched } = await lockThroughFailover({
        replicas: 1,
        timeout: 100,
      });
      reportFigures('S12 with WAIT 1', {
        confirmed: acknowledged,
        refused,
        lost: checkHistory(events).overlaps.length,
        'switch ms': switched,
      });
      expect(acknowledged).toBeGreaterThan(0);
      expect(refused).toBeGreaterThan(0);
      expect(assertHistory(events, { name: 'S12-wait' }).intervals).toBe(acknowledged);
    },
    timeLimit(60_000, 120_000),
  );
});
