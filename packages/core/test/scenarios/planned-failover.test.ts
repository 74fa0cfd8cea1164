import { createLocker, type Lock, type LockLostError, ReplicationError } from '@lock/core';
import { assertHistory, checkHistory, HistoryRecorder, startSentinel, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { reportFigures } from './support/figures.js';
import { timeLimit } from './support/tier.js';

/**
 * Locks A takes on the old master once the replica is promoted, with the sentinels paused so
 * that none turns the old master into a replica meanwhile: the old master acknowledges them and
 * the promoted replica, no longer replicating from it, never sees them. The window the writer
 * may or may not hit, made certain.
 */
const WINDOW = 5;

/**
 * S12: a client stays connected to the master (as clients that have not noticed a switch do)
 * and keeps taking locks while `SENTINEL FAILOVER` promotes the replica, then `WINDOW` more on
 * the old master, which goes on acknowledging. Afterwards client B, through the
 * sentinels, tries every lock A believes it holds: each one B gets is a lost lock, and two holders.
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
    const take = async (key: string) => {
      try {
        const lock = await a.acquire(key, { ttl: 60_000, wait: 0 });
        recorderA.acquired(lock);
        held.push(lock);
      } catch (error) {
        if (!(error instanceof ReplicationError)) throw error;
        refused += 1;
      }
    };
    let running = true;
    const writer = (async () => {
      for (let i = 0; running; i++) await take(`s12:${i}`);
    })();
    await waitFor('A to hold locks on the old master', async () => held.length > 0);
    const started = performance.now();
    await setup.failover();
    const switched = performance.now() - started;
    for (const sentinel of setup.sentinels) sentinel.pause();
    running = false;
    await writer;
    for (let i = 0; i < WINDOW; i++) await take(`s12:window:${i}`);
    for (const sentinel of setup.sentinels) sentinel.resume();
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
      expect(acknowledged).toBeGreaterThan(WINDOW);
      // At least the window's: the writer's locks since the promotion are lost as well.
      expect(verdict.overlaps.length).toBeGreaterThanOrEqual(WINDOW);
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
      // At least the window's: the old master has no replica left to confirm them.
      expect(refused).toBeGreaterThanOrEqual(WINDOW);
      expect(assertHistory(events, { name: 'S12-wait' }).intervals).toBe(acknowledged);
    },
    timeLimit(60_000, 120_000),
  );
});

describe('S12: failover awareness (ioredis `failoverDetector`)', () => {
  it(
    'on +switch-master every unconfirmed handle aborts (failover); WAIT-confirmed handles stay held and are renewed at once on the new master',
    async () => {
      await using setup = await startSentinel({ replicas: 1, sentinels: 3 });
      const unconfirmed = createLocker({
        redis: setup.client({ failoverDetector: true }),
        replication: false,
      });
      const confirmedLocker = createLocker({
        redis: setup.client({ failoverDetector: true }),
        replication: { replicas: 1, timeout: 1_000 },
      });
      const plain = await Promise.all(
        Array.from({ length: 20 }, (_, i) => unconfirmed.acquire(`s12:plain:${i}`, { ttl: 60_000 })),
      );
      const confirmed = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          confirmedLocker.acquire(`s12:confirmed:${i}`, { ttl: 60_000, renew: true }),
        ),
      );
      const abortedAt = plain.map(
        (lock) =>
          new Promise<number>((resolve) =>
            lock.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
          ),
      );
      const before = confirmed.map((lock) => lock.validUntil);
      const watcher = new Redis({ host: setup.sentinels[0]!.host, port: setup.sentinels[0]!.port });
      watcher.on('error', () => {});
      const switched = new Promise<number>((resolve) => {
        watcher.on('message', () => resolve(performance.now()));
      });
      await watcher.subscribe('+switch-master');
      await setup.failover();
      const switchedAt = await switched;
      const aborts = await Promise.all(abortedAt);
      expect(plain.map((lock) => (lock.signal.reason as LockLostError).reason)).toEqual(
        plain.map(() => 'failover'),
      );
      // Not by their schedule (a third of the 60 s lease after the grant): at once, after the switch.
      await waitFor(
        'the confirmed holds to be renewed on the new master',
        async () => confirmed.every((lock, i) => lock.validUntil > before[i]!),
        { timeout: 10_000 },
      );
      expect(confirmed.map((lock) => lock.signal.aborted)).toEqual(confirmed.map(() => false));
      const checker = createLocker({ redis: setup.client(), replication: false });
      for (const lock of confirmed) expect((await checker.inspect(lock.key)).holds).toBe(1);
      reportFigures('S12 failover awareness', {
        'unconfirmed aborted': aborts.length,
        'last abort after +switch-master ms': Math.max(...aborts) - switchedAt,
        'confirmed kept': confirmed.length,
      });
      await Promise.all([unconfirmed.close(), confirmedLocker.close(), checker.close()]);
      watcher.disconnect();
    },
    timeLimit(60_000, 120_000),
  );
});
