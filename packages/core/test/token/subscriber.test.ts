import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { waiterSubscribed } from '../contract/keys.js';

it('wakes waiters by release message even when the caller’s client has its offline queue off', async () => {
  await using server = await startRedis();
  const redis = new Redis({ ...server.redisOptions, enableOfflineQueue: false });
  await new Promise((resolve) => redis.once('ready', resolve));
  const holder = createLocker({ redis });
  // Polls once a minute: only the release message can hand the lock over within the wait.
  const waiter = createLocker({ redis, retry: { base: 60_000, max: 60_000, jitter: 0 } });
  const lock = await holder.acquire('queue-off', { ttl: 30_000 });
  const waiting = waiter.acquire('queue-off', { wait: 10_000 });
  await waiterSubscribed([server.client()], 'queue-off');
  await lock.release();
  const next = await waiting;
  expect(next.fence).toBeGreaterThan(lock.fence);
  await next.release();
  await holder.close();
  await waiter.close();
  redis.disconnect();
});
