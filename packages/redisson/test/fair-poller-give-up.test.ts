import { AcquireTimeoutError, createEngine, singleBackend } from '@lock/core';
import { expect, it } from 'vitest';
import { FairLockProtocol } from '../src/index.js';
import { useRedis } from './helpers/server.js';

const context = useRedis();

/**
 * The fair lock queues a caller by its wait alone, not by the queue lease a listening engine
 * sends: an engine that polls (a backend without release messages) must still take its waiter
 * out of the queue when it gives up, or every later waiter stands behind a ghost for minutes.
 */
it('a polling waiter of the fair lock that gives up leaves its queue', async () => {
  const { redis } = context;
  const fair = new FairLockProtocol();
  const held = await fair.acquire(redis, 'fair-poll', 'holder:1', 10_000, { wait: 0, attempt: 'h' });
  expect(held).toMatchObject({ acquired: true });
  const engine = createEngine(singleBackend(redis, fair, { subscriber: false }), { prefix: '' });
  const error = await engine.acquire('fair-poll', { wait: 300 }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(AcquireTimeoutError);
  expect(await redis.lrange('redisson_lock_queue:{fair-poll}', 0, -1)).toEqual([]);
  expect(await redis.zcard('redisson_lock_timeout:{fair-poll}')).toBe(0);
  await engine.close();
});
