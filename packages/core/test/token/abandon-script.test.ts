import { createLocker, LockAbortError } from '@lock/core';
import { startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { SLOW_POLL, until, untilQueued, untilSubscribed } from '../support/waiter-queue.js';

/** NOSCRIPT errors the server answered since its stats were last reset. */
async function noScriptErrors(redis: Redis): Promise<number> {
  const stats = await redis.info('errorstats');
  return Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(stats)?.[1] ?? 0);
}

/**
 * A waiter gives up its turn (abandon.lua) when its call is aborted or its wait ends, with the
 * caller's rejection waiting on it. Sent as EVALSHA, its first run on a server (or after a
 * restart, failover, SCRIPT FLUSH) cost a NOSCRIPT answer and a second round trip, the waiter
 * staying queued ahead of others meanwhile.
 */
it('an aborted waiter leaves the queue without a second round trip on a server that does not know the script', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const holder = createLocker({ redis });
  const waiter = createLocker({ redis, retry: SLOW_POLL });
  try {
    await holder.acquire('abandoned', { ttl: 30_000 });
    const controller = new AbortController();
    const waiting = waiter.acquire('abandoned', { ttl: 30_000, wait: 20_000, signal: controller.signal });
    await untilQueued(redis, 'abandoned', 1);
    // Its retry right after subscribing is sent by then, on this connection, ahead of the flush.
    await untilSubscribed(redis, '{lock:abandoned}:released', 1);
    await redis.script('FLUSH');
    await redis.config('RESETSTAT');

    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(LockAbortError);
    await until(
      async () => (await redis.exists('{lock:abandoned}:queue', '{lock:abandoned}:waiters')) === 0,
      'the waiter to leave the queue',
    );
    expect(await noScriptErrors(redis)).toBe(0);
  } finally {
    await Promise.all([holder.close(), waiter.close()]);
  }
});
