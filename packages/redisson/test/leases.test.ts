import { setTimeout as sleep } from 'node:timers/promises';
import { createLocker, type Lock } from '@lock/core';
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  FairLockProtocol,
  type Redisson,
  type RedissonProtocol,
  RLockProtocol,
  WriteLockProtocol,
} from '../src/index.js';
import { useRedisson } from './helpers/server.js';

/**
 * Issue 15 item 1: a re-entry with a shorter lease must not cut the lease the outer hold was
 * promised, and every handle's `validUntil` is a deadline the server honours.
 */
describe('re-entry with another lease', () => {
  let redis!: Redis;
  let redisson!: Redisson;
  useRedisson((setup) => {
    ({ redis, redisson } = setup);
  });

  for (const kind of ['getLock', 'getFairLock'] as const) {
    it(`${kind}: an outer lock() without a lease stays held past an inner 1 s lease, until its last unlock`, async () => {
      const lock = redisson[kind]('orders:7');
      const other = redisson[kind]('orders:7');
      await redisson.run(async () => {
        await lock.lock();
        await lock.lock({ lease: 1_000 });
        await sleep(1_500);
        expect(await redis.hvals('orders:7')).toEqual(['2']);
        expect(await other.tryLock({ threadId: 99 })).toBe(false);
        await lock.unlock();
        await sleep(1_500);
        expect(await redis.hvals('orders:7')).toEqual(['1']);
        expect(await other.tryLock({ threadId: 99 })).toBe(false);
        await lock.unlock();
      });
      expect(await redis.exists('orders:7')).toBe(0);
    });
  }

  const nested = {
    getLock: (client: Redisson) => client.getLock('orders:9'),
    writeLock: (client: Redisson) => client.getReadWriteLock('orders:9').writeLock(),
  };
  for (const [kind, open] of Object.entries(nested)) {
    it(`${kind}: lock()/unlock() pairs nested in an outer lock() never take the TTL past one lease`, async () => {
      const lock = open(redisson);
      const ttls: number[] = [];
      await redisson.run(async () => {
        await lock.lock();
        for (let i = 0; i < 20; i++) {
          await lock.lock();
          ttls.push(await redis.pttl('orders:9'));
          await lock.unlock();
          ttls.push(await redis.pttl('orders:9'));
        }
        const latches = await redis.keys('redisson_lock_attempt:*');
        expect(latches).toHaveLength(1);
        ttls.push(await redis.pttl(latches[0] as string));
        await lock.unlock();
      });
      // A crashed holder keeps Java and every other thread out for one watchdog lease, not twenty.
      expect(Math.max(...ttls)).toBeLessThanOrEqual(30_000);
      expect(await redis.exists('orders:9')).toBe(0);
    });
  }

  describe('fixed leases on both holds: validUntil never exceeds the server PTTL', () => {
    const protocols: Record<string, () => RedissonProtocol> = {
      RLock: () => new RLockProtocol(),
      'fair lock': () => new FairLockProtocol(),
      'write lock': () => new WriteLockProtocol(),
    };

    /** Asserts the handle's deadline is no later than the key's: ms left by our clock at most the PTTL. */
    const withinServerTtl = async (handle: Lock) => {
      const before = performance.now();
      const pttl = await redis.pttl('orders:8');
      expect(pttl).toBeGreaterThan(0);
      expect(handle.validUntil - before).toBeLessThanOrEqual(pttl);
      return pttl;
    };

    for (const [name, protocol] of Object.entries(protocols)) {
      it(`${name}: a shorter inner lease, a longer inner lease, and partial unlocks`, async () => {
        const locker = createLocker({ redis, protocol: protocol(), prefix: '' });
        onTestFinished(() => locker.close());
        const owner = `${redisson.id}:1`;
        const outer = await locker.acquire('orders:8', { owner, ttl: 3_000 });
        await withinServerTtl(outer);
        const shorter = await locker.acquire('orders:8', { owner, ttl: 1_000 });
        // The shorter re-entry did not cut the outer hold's lease.
        expect(await withinServerTtl(outer)).toBeGreaterThan(2_000);
        await withinServerTtl(shorter);
        expect(await shorter.release()).toBe('held');
        expect(await withinServerTtl(outer)).toBeGreaterThan(2_000);
        const longer = await locker.acquire('orders:8', { owner, ttl: 10_000 });
        expect(await withinServerTtl(longer)).toBeGreaterThan(9_000);
        await withinServerTtl(outer);
        expect(await longer.release()).toBe('held');
        await withinServerTtl(outer);
        expect(await outer.release()).toBe('released');
      });
    }
  });
});
