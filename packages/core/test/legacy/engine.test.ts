import { createLocker, InvalidKeyError, InvalidOptionError, legacyProtocol } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
});
afterAll(() => server.stop());
beforeEach(async () => {
  await redis.flushall();
});

it('a legacy locker writes the exact key bytes (no prefix) as integer seconds and releases its own value', async () => {
  const locker = createLocker({ redis, protocol: legacyProtocol({ unit: 's' }), prefix: '' });
  const lock = await locker.acquire('lock_goods:300', { ttl: 3_000 });
  expect(await redis.get('lock_goods:300')).toMatch(/^\d{10}$/);
  expect(await redis.ttl('lock_goods:300')).toBe(4);
  expect(await locker.inspect('lock_goods:300')).toMatchObject({
    protocol: 'legacy',
    held: true,
    fence: lock.fence,
  });
  await lock.release();
  expect(await redis.exists('lock_goods:300')).toBe(0);
  await locker.close();
});

it('a waiting acquire is woken by the release of a legacy lock', async () => {
  const locker = createLocker({ redis, protocol: legacyProtocol() });
  const first = await locker.acquire('k', { ttl: 20_000 });
  const order: string[] = [];
  const second = locker.acquire('k', { ttl: 20_000, wait: 15_000 }).then((lock) => {
    order.push('second acquired');
    return lock;
  });
  order.push('first releasing');
  await first.release();
  const lock = await second;
  expect(order).toEqual(['first releasing', 'second acquired']);
  expect(lock.fence).toBeGreaterThan(first.fence);
  await lock.release();
  await locker.close();
});

it('renewal rewrites the timestamp: the handle keeps releasing with the new token', async () => {
  const locker = createLocker({ redis, protocol: legacyProtocol() });
  const lock = await locker.acquire('k', { ttl: 1_000 });
  const before = await redis.get('lock:k');
  await lock.extend(30_000);
  const after = await redis.get('lock:k');
  expect(Number(after)).toBeGreaterThan(Number(before));
  expect(await redis.pttl('lock:k')).toBeGreaterThan(29_000);
  await lock.release();
  expect(await redis.exists('lock:k')).toBe(0);
  await locker.close();
});

it('surfaces a hash under the name and bad seconds ttls as typed errors, writing nothing', async () => {
  const locker = createLocker({ redis, protocol: legacyProtocol({ unit: 's' }) });
  await redis.hset('lock:redisson', 'uuid:1', '1');
  await expect(locker.acquire('redisson', { ttl: 3_000, wait: 0 })).rejects.toThrow(InvalidKeyError);
  await expect(locker.acquire('k', { ttl: 2_500 })).rejects.toThrow(InvalidOptionError);
  expect(await redis.keys('*')).toEqual(['lock:redisson']);
  await locker.close();
});
