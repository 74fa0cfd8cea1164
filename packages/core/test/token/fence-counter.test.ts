import { createLocker, fenceCounter, keySlot, type Lock } from '@lock/core';
import { startCluster, startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { untilQueued } from '../support/waiter-queue.js';

describe('fence counters', () => {
  it('leave one counter (and its epoch stamp), not one per key, after 2 000 distinct keys were locked and released', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const token = createLocker({ redis });
    const legacy = createLocker({ redis, protocol: 'legacy' });
    const fences: number[] = [];
    for (let i = 0; i < 1_000; i++) {
      for (const locker of [token, legacy]) {
        const lock = await locker.acquire(`order:${i}`, { ttl: 5_000 });
        fences.push(lock.fence);
        expect([lock.key, await lock.release()]).toEqual([`order:${i}`, 'released']);
      }
    }
    expect((await redis.keys('*')).sort()).toEqual(['{lock:#}:fences', '{lock:#}:fences:epoch']);
    expect(fences).toEqual(fences.map((_, i) => i + 1));
    await token.close();
    await legacy.close();
  });

  it('migrate a per-key counter of an earlier version: the fence goes on from it, and it is deleted', async () => {
    await using server = await startRedis();
    const redis = server.client();
    await redis.set('{lock:order:7}:fence', '57');
    await redis.set('{lock:order:8}:fence', '3');
    await redis.set('{lock:legacy:9}:fence', '90');
    const token = createLocker({ redis });
    const legacy = createLocker({ redis, protocol: 'legacy' });
    const first = await token.acquire('order:7', { ttl: 5_000 });
    expect(first.fence).toBe(58);
    await first.release();
    const second = await token.acquire('order:8', { ttl: 5_000 });
    // The shared counter is already past this key's old counter: still strictly increasing.
    expect(second.fence).toBe(59);
    const third = await legacy.acquire('legacy:9', { ttl: 5_000 });
    expect(third.fence).toBe(91);
    expect(await redis.exists('{lock:order:7}:fence', '{lock:order:8}:fence', '{lock:legacy:9}:fence')).toBe(
      0,
    );
    expect((await token.inspect('order:8')).fence).toBe(59);
    expect((await legacy.inspect('legacy:9')).fence).toBe(91);
    await second.release();
    await third.release();
    await token.close();
    await legacy.close();
  });

  it('migrate a larger per-key counter found after the shared counter exists: fences never go backwards', async () => {
    await using server = await startRedis();
    const redis = server.client();
    // An earlier version locked order:2 far more often than order:1.
    await redis.set('{lock:order:1}:fence', '5');
    await redis.set('{lock:order:2}:fence', '500');
    const token = createLocker({ redis });
    const first = await token.acquire('order:1', { ttl: 5_000 });
    expect(first.fence).toBe(6);
    await first.release();
    // The shared counter already exists here: order:2's own counter must still be read.
    const second = await token.acquire('order:2', { ttl: 5_000 });
    expect(second.fence).toBe(501);
    expect(await redis.exists('{lock:order:2}:fence')).toBe(0);
    await second.release();
    await token.close();
  });

  it('keep fences past 14 digits exact: in the lock, its inspection, a re-entry and a direct grant', async () => {
    await using server = await startRedis();
    const redis = server.client();
    // The scripts write fences as text they format themselves: it must stay exact this far up.
    await redis.set('{lock:#}:fences', String(2 ** 52 - 1));
    const locker = createLocker({ redis });
    const other = createLocker({ redis: server.client() });
    try {
      let waiting: Promise<Lock> | undefined;
      await locker.using('big', { ttl: 5_000 }, async (lock) => {
        expect(lock.fence).toBe(2 ** 52);
        expect((await locker.inspect('big')).fence).toBe(2 ** 52);
        await locker.using('big', { ttl: 5_000 }, async (inner) => {
          expect(inner.fence).toBe(2 ** 52);
        });
        waiting = other.acquire('big', { ttl: 5_000, wait: 10_000 });
        await untilQueued(redis, 'big', 1);
      });
      const next = await waiting;
      expect(next?.fence).toBe(2 ** 52 + 1);
      expect((await other.inspect('big')).fence).toBe(2 ** 52 + 1);
      await next?.release();
    } finally {
      await Promise.all([locker.close(), other.close()]);
    }
  });

  it('on a cluster, live in the slot of the locks they serve', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    const redis = cluster.client();
    const locker = createLocker({ redis });
    for (const key of ['a', 'order:1', 'order:{user:7}:cart']) {
      const lock = await locker.acquire(key, { ttl: 5_000 });
      const lockKey = key.includes('{') ? `lock:${key}` : `{lock:${key}}`;
      const counter = fenceCounter(`lock:${key}`, lockKey, true);
      expect(keySlot(counter)).toBe(keySlot(lockKey));
      expect(await redis.get(counter)).toBe(String(lock.fence));
      await lock.release();
    }
    await locker.close();
  });
});
