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
