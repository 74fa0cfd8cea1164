import { createLocker, fenceCounter, InvalidKeyError, legacyProtocol } from '@lock/core';
import { startCluster } from '@lock/testing';
import { expect, it } from 'vitest';
import { waiterSubscribed } from '../contract/keys.js';

it('on a cluster: a tagged name keeps lock, fence and owner record in one slot; an untagged one is refused, one whole tag taken', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  const redis = cluster.client();
  const locker = createLocker({ redis, protocol: legacyProtocol({ unit: 's' }), prefix: '' });
  const first = await locker.acquire('{lock_goods}:300', { ttl: 20_000 });
  expect(await redis.get('{lock_goods}:300')).toMatch(/^\d{10}$/);
  expect(await redis.get(fenceCounter('{lock_goods}:300', '{lock_goods}:300', true))).toBe(
    String(first.fence),
  );
  expect(await redis.hget('{lock_goods}:300:owner', 'fence')).toBe(String(first.fence));
  expect(await redis.hget('{lock_goods}:300:owner', 'owner')).toBe(first.owner);
  // The waiter polls once a minute and the lock lives 21 s, so only the release message,
  // published on the sharded channel, can hand it over within the 15 s wait.
  const slowPoller = createLocker({
    redis,
    protocol: legacyProtocol({ unit: 's' }),
    prefix: '',
    retry: { base: 60_000, max: 60_000, jitter: 0 },
  });
  const second = slowPoller.acquire('{lock_goods}:300', { ttl: 3_000, wait: 15_000 });
  // Once the waiter is subscribed, only the release message can wake it in time.
  await waiterSubscribed([redis], '{lock_goods}:300');
  await first.release();
  const next = await second;
  expect(next.fence).toBeGreaterThan(first.fence);
  await next.release();
  await expect(locker.acquire('lock_goods:300', { ttl: 3_000 })).rejects.toThrow(InvalidKeyError);
  await expect(locker.acquire('lock_goods:300', { ttl: 3_000 })).rejects.toThrow(/\{hash tag\}/);
  expect(await redis.exists('lock_goods:300')).toBe(0);
  // Refused off a cluster for sharing its side keys with `lock_goods`, which a cluster refuses.
  const whole = await locker.acquire('{lock_goods}', { ttl: 3_000 });
  expect(await redis.hget('{lock_goods}:owner', 'owner')).toBe(whole.owner);
  // Its side keys are those `lock_goods` would have: inspecting that name is refused too.
  await expect(locker.inspect('lock_goods')).rejects.toThrow(/\{hash tag\}/);
  await whole.release();
  expect(await redis.exists('{lock_goods}', '{lock_goods}:owner')).toBe(0);
  await locker.close();
  await slowPoller.close();
}, 60_000);
