import { createLocker } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { createRedisson } from '../src/index.js';

/** Connections subscribed to anything (plain or sharded channels). */
async function subscribers(admin: Redis): Promise<number> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return list.split('\n').filter((line) => /\b(sub|ssub|psub)=[1-9]/.test(line)).length;
}

/** A waiter that nothing wakes polls only after 60 s: a hand-over within the test comes from a message. */
const SLOW_POLL = { base: 60_000, max: 60_000, jitter: 0 };

it('a Redisson client and a legacy locker on one ioredis client share its subscriber connection, closed by the last to close', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const redis = server.client();
  const holder = createRedisson({ redis: server.client() });
  const redisson = createRedisson({ redis, retry: SLOW_POLL });
  const lockerHolder = createLocker({ redis: server.client(), protocol: 'legacy' });
  const locker = createLocker({ redis, protocol: 'legacy', retry: SLOW_POLL });

  await holder.getLock('shared').lock({ threadId: 1 });
  const held = await lockerHolder.acquire('shared', { ttl: 30_000 });
  const redissonWaits = redisson.getLock('shared').tryLock({ threadId: 1, wait: 20_000 });
  const lockerWaits = locker.acquire('shared', { wait: 20_000 });
  await waitFor(
    'both waiters subscribed',
    async () => ((await admin.pubsub('CHANNELS')) as string[]).length === 2,
    { interval: 5 },
  );
  expect(await subscribers(admin)).toBe(1);

  await holder.getLock('shared').unlock({ threadId: 1 });
  expect(await redissonWaits).toBe(true);
  await redisson.getLock('shared').unlock({ threadId: 1 });
  // The Redisson client shut down first: the locker's waiter is still woken on the connection.
  await redisson.shutdown();
  const releasedAt = performance.now();
  await held.release();
  const next = await lockerWaits;
  expect(next.fence).toBeGreaterThan(held.fence);
  // By the release message, not by the last attempt at the end of the wait.
  expect(performance.now() - releasedAt).toBeLessThan(10_000);
  await next.release();
  expect(await subscribers(admin)).toBe(1);
  await locker.close();
  await waitFor('the shared connection to close', async () => (await subscribers(admin)) === 0);
  await Promise.all([holder.shutdown(), lockerHolder.close()]);
});
