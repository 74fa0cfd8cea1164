import { createLocker, type Lock, LockError, type Locker, LockLostError, ReplicationError } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';

/** Generous bound for a refusal on a loaded machine: a hang would run into the 10 s wait, a retry loop too. */
const REFUSAL_BOUND_MS = 5_000;

describe('S15: a master with min-replicas-to-write 1 whose replica stopped answering', () => {
  let admin: Redis;
  let locker: Locker;
  let renewing: Locker;
  let renewed: Lock;
  /** The renewed lock's loss, with the PTTL its key had when the loss was seen. */
  let loss: Promise<{ reason: unknown; ttlLeft: number }>;
  beforeAll(async () => {
    const master = await startRedis({
      config: { 'min-replicas-to-write': '1', 'min-replicas-max-lag': '1' },
    });
    const replica: RedisServer = await startRedis({ config: { replicaof: `${master.host} ${master.port}` } });
    admin = master.client();
    locker = createLocker({ redis: master.client() });
    const goodReplicas = async () =>
      Number(/min_slaves_good_slaves:(\d+)/.exec(await admin.info('replication'))?.[1] ?? '-1');
    await waitFor('the replica counted as good', async () => (await goodReplicas()) === 1, {
      timeout: 20_000,
    });
    // The replica has acknowledged a write, so WAIT gating answers at once from here on.
    await admin.set('warm-up', '1', 'PX', 60_000);
    expect(await admin.call('WAIT', 1, 10_000)).toBe(1);
    // With the replica answering, locks work (WAIT gating included).
    await (await locker.acquire('guarded', { ttl: 10_000, wait: 0 })).release();
    renewing = createLocker({ redis: master.client(), ttl: 1_500 });
    renewed = await renewing.acquire('renewed');
    loss = new Promise((resolve) => {
      renewed.signal.addEventListener(
        'abort',
        () => {
          const reason = renewed.signal.reason;
          void admin.pttl('{lock:renewed}').then((ttlLeft) => resolve({ reason, ttlLeft }));
        },
        { once: true },
      );
    });
    // SIGSTOP: the replica stops acknowledging; after max-lag the master refuses writes.
    replica.pause();
    await waitFor('the replica counted as lagging', async () => (await goodReplicas()) === 0, {
      timeout: 20_000,
      interval: 100,
    });
    return async () => {
      replica.resume();
      await locker.close();
      await renewing.close();
      await replica.stop();
      await master.stop();
    };
  });

  async function refused(): Promise<{ error: unknown; took: number }> {
    const started = performance.now();
    const error = await locker.acquire('guarded', { ttl: 10_000, wait: 10_000 }).catch((e: unknown) => e);
    return { error, took: performance.now() - started };
  }

  it('refuses the acquire within a bounded time, saying why, and writes nothing', async () => {
    const keys = await admin.dbsize();
    const { error, took } = await refused();
    expect(error).toBeInstanceOf(ReplicationError);
    expect(((error as Error).cause as Error).message).toMatch(/NOREPLICAS/);
    // Named by the key as given, though the backend raised it with the Redis resource (prefix + key).
    expect((error as ReplicationError).key).toBe('guarded');
    expect(took).toBeLessThan(REFUSAL_BOUND_MS);
    expect(await admin.dbsize()).toBe(keys);
    expect(await locker.isLocked('guarded')).toBe(false);
  });

  it('reports the refusal as a typed lock error, not a raw Redis reply error', async () => {
    const { error } = await refused();
    expect(error).toBeInstanceOf(LockError);
  });

  it('aborts a renewed lock whose renewal is refused, before its key expires, leaving its TTL in place', async () => {
    const { reason, ttlLeft } = await loss;
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('renewal-failed');
    // Renewals run every ttl/3, so the first refused one comes with most of a lease left.
    expect(ttlLeft).toBeGreaterThan(0);
    expect(() => renewed.assertHeld()).toThrow(LockLostError);
  });
});
