import { createLocker, UnsafeServerError } from '@lock/core';
import { startCluster, startRedis } from '@lock/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a server that may evict locks', () => {
  it('is warned about once per server, whatever the number of lockers; noeviction is not', async () => {
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    await using risky = await startRedis({ config: { 'maxmemory-policy': 'volatile-lru' } });
    await using safe = await startRedis({ config: { 'maxmemory-policy': 'noeviction' } });
    for (const server of [risky, risky, safe]) {
      const locker = createLocker({ redis: server.client() });
      const lock = await locker.acquire('k', { ttl: 5_000 });
      await lock.release();
      await locker.close();
    }
    expect(warnings.mock.calls.map((call) => String(call[0]))).toEqual([
      'maxmemory-policy is "volatile-lru": Redis may evict a held lock or a fence counter; set it to "noeviction"',
    ]);
  });

  it("is refused with eviction: 'refuse', before anything is written", async () => {
    await using server = await startRedis({ config: { 'maxmemory-policy': 'allkeys-lru' } });
    const redis = server.client();
    const locker = createLocker({ redis, eviction: 'refuse' });
    await expect(locker.acquire('k', { wait: 0 })).rejects.toBeInstanceOf(UnsafeServerError);
    expect(await redis.dbsize()).toBe(0);
    await locker.close();
  });

  it('is found on a cluster on whichever master may evict, from the first acquisition of a client still loading its slots', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    // One master of three may evict; the others are safe.
    await cluster.masters[2]!.client().config('SET', 'maxmemory-policy', 'allkeys-lru');
    const redis = cluster.client();
    const locker = createLocker({ redis, eviction: 'refuse' });
    await expect(locker.acquire('{a}:1', { wait: 0 })).rejects.toBeInstanceOf(UnsafeServerError);
    expect(await Promise.all(cluster.masters.map((master) => master.client().dbsize()))).toEqual([0, 0, 0]);
    await locker.close();
  });
});
