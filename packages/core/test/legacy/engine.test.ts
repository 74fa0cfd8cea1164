import { createLocker, InvalidKeyError, InvalidOptionError, legacyProtocol } from '@lock/core';
import { expect, it } from 'vitest';
import { until } from '../support/waiter-queue.js';
import { useRedis } from './fixture.js';

const t = useRedis();

it('a legacy locker writes the exact key bytes (no prefix) as integer seconds and releases its own value', async () => {
  const locker = createLocker({ redis: t.redis, protocol: legacyProtocol({ unit: 's' }), prefix: '' });
  const lock = await locker.acquire('lock_goods:300', { ttl: 3_000 });
  expect(await t.redis.get('lock_goods:300')).toMatch(/^\d{10}$/);
  expect(Math.ceil((await t.redis.pttl('lock_goods:300')) / 1000)).toBe(4);
  expect(await locker.inspect('lock_goods:300')).toMatchObject({
    protocol: 'legacy',
    held: true,
    fence: lock.fence,
  });
  await lock.release();
  expect(await t.redis.exists('lock_goods:300')).toBe(0);
  await locker.close();
});

it('a waiting acquire gets a legacy lock after the holder releases it, with the next fence', async () => {
  const locker = createLocker({ redis: t.redis, protocol: legacyProtocol() });
  const first = await locker.acquire('k', { ttl: 20_000 });
  let settled = false;
  const second = locker.acquire('k', { ttl: 20_000, wait: 15_000 }).finally(() => {
    settled = true;
  });
  // A refused attempt makes the call subscribe to the release channel and wait: until then, or
  // until it settles (which it must not do while the first holds the lock).
  const waiting = async () => {
    const [, subscribers] = (await t.redis.pubsub('NUMSUB', '{lock:k}:released')) as [string, number];
    return Number(subscribers) >= 1;
  };
  await until(async () => settled || (await waiting()), 'the second acquire waits or settles');
  expect(settled).toBe(false);
  expect(await locker.inspect('k')).toMatchObject({ held: true, owner: first.owner, fence: first.fence });
  expect(settled).toBe(false);
  await first.release();
  const lock = await second;
  expect(lock.owner).not.toBe(first.owner);
  expect(await locker.inspect('k')).toMatchObject({ held: true, owner: lock.owner });
  // Refused attempts draw no fence: the next grant is the counter's next value.
  expect(lock.fence).toBe(first.fence + 1);
  await lock.release();
  await locker.close();
});

it('renewal rewrites the timestamp: the handle keeps releasing with the new token', async () => {
  const locker = createLocker({ redis: t.redis, protocol: legacyProtocol() });
  const lock = await locker.acquire('k', { ttl: 1_000 });
  const before = await t.redis.get('lock:k');
  await lock.extend(30_000);
  const after = await t.redis.get('lock:k');
  expect(Number(after)).toBeGreaterThan(Number(before));
  expect(await t.redis.pttl('lock:k')).toBeGreaterThan(29_000);
  await lock.release();
  expect(await t.redis.exists('lock:k')).toBe(0);
  await locker.close();
});

it('surfaces a hash under the name and bad seconds ttls as typed errors, writing nothing', async () => {
  const locker = createLocker({ redis: t.redis, protocol: legacyProtocol({ unit: 's' }) });
  await t.redis.hset('lock:redisson', 'uuid:1', '1');
  await expect(locker.acquire('redisson', { ttl: 3_000, wait: 0 })).rejects.toThrow(InvalidKeyError);
  await expect(locker.acquire('k', { ttl: 2_500 })).rejects.toThrow(InvalidOptionError);
  expect(await t.redis.keys('*')).toEqual(['lock:redisson']);
  await locker.close();
});

it('frees the key for our other owners once every re-entered handle of a lock a peer deleted is released', async () => {
  const locker = createLocker({ redis: t.redis, protocol: legacyProtocol() });
  const other = createLocker({ redis: t.redis, protocol: legacyProtocol() });
  const lost = await locker
    .using('k', { ttl: 20_000, renew: false }, () =>
      locker.using('k', { ttl: 20_000, renew: false }, async (inner) => {
        expect(inner.holds).toBe(2);
        // A legacy peer's check-then-DEL: the owner record alone keeps our other owners out.
        await t.redis.del('lock:k');
        expect(await other.tryAcquire('k')).toBeNull();
      }),
    )
    .catch((error: unknown) => error);
  expect(lost).toMatchObject({ name: 'LockLostError', reason: 'taken' });
  await until(
    async () => (await t.redis.exists('{lock:k}:owner')) === 0,
    'the record to go with the last hold',
  );
  const next = await other.acquire('k', { ttl: 5_000, wait: 0 });
  await next.release();
  await locker.close();
  await other.close();
});
