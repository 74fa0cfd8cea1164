import { startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { createRedisson, type RedissonOptions } from '../src/index.js';

/** The options as a caller may hold them: a plain object it can still write to after creation. */
interface Mutable {
  redis: Redis;
  retry: { base: number; max: number };
  replication: RedissonOptions['replication'];
}

/**
 * A lock kind's engine is made at its first lock: options the caller changes after
 * `createRedisson` checked them must not reach it, neither to be refused then nor to lock
 * differently than configured (a WAIT for replicas the server does not have).
 */
it.each([
  [
    'retry replaced by an invalid one',
    (options: Mutable) => {
      options.retry = { base: -1, max: 100 };
    },
  ],
  [
    'retry changed in place to an invalid one',
    (options: Mutable) => {
      options.retry.base = -1;
    },
  ],
  [
    'replication replaced by a WAIT for a replica the server does not have',
    (options: Mutable) => {
      options.replication = { replicas: 1, timeout: 50 };
    },
  ],
])(
  'locks as configured at creation after the caller’s options object is changed: %s',
  async (_, change) => {
    await using server = await startRedis();
    const redis = server.client();
    const options: Mutable = { redis, retry: { base: 10, max: 100 }, replication: false };
    const redisson = createRedisson(options);
    try {
      change(options);
      const lock = redisson.getLock('snapshot');
      await lock.lock({ threadId: 1 });
      expect(await lock.isHeldByThread(1)).toBe(true);
      await lock.unlock({ threadId: 1 });
      expect(await lock.isLocked()).toBe(false);
    } finally {
      await redisson.shutdown();
    }
  },
  30_000,
);

/** `target` with a field `name` that answers `valid` to its first read and `invalid` to every later one. */
function changingOnRead<T extends object>(target: T, name: string, valid: unknown, invalid: unknown): T {
  let reads = 0;
  return Object.defineProperty(target, name, {
    enumerable: true,
    get: () => (++reads === 1 ? valid : invalid),
  });
}

/**
 * An options object with getters (or a Proxy) may answer the check one value and a later read
 * another: each option is read once, and the value checked is the one the client locks with.
 */
it.each([
  [
    'retry',
    (redis: Redis) => changingOnRead({ redis }, 'retry', { base: 10, max: 100 }, { base: -1, max: 100 }),
  ],
  ['retry.base', (redis: Redis) => ({ redis, retry: changingOnRead({ max: 100 }, 'base', 10, -1) })],
  ['replication', (redis: Redis) => changingOnRead({ redis }, 'replication', false, 'always')],
  ['prefix', (redis: Redis) => changingOnRead({ redis }, 'prefix', 'app:', 42)],
  ['lockWatchdogTimeout', (redis: Redis) => changingOnRead({ redis }, 'lockWatchdogTimeout', 30_000, -1)],
  ['fairLockWaitTimeout', (redis: Redis) => changingOnRead({ redis }, 'fairLockWaitTimeout', 300_000, -1)],
  ['commandTimeout', (redis: Redis) => changingOnRead({ redis }, 'commandTimeout', 500, -1)],
])(
  'locks with the %s value it checked when a getter answers a valid one first and an invalid one after',
  async (_, optionsOf) => {
    await using server = await startRedis();
    const redisson = createRedisson(optionsOf(server.client()) as RedissonOptions);
    try {
      for (const lock of [redisson.getLock('read-once'), redisson.getFairLock('read-once-fair')]) {
        await lock.lock({ threadId: 1 });
        expect(await lock.isHeldByThread(1)).toBe(true);
        await lock.unlock({ threadId: 1 });
      }
    } finally {
      await redisson.shutdown();
    }
  },
  30_000,
);
