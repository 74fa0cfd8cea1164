import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { waiterSubscribed } from '../contract/keys.js';
import { commandCalls } from '../faults/support/stats.js';
import { SLOW_POLL } from '../support/waiter-queue.js';

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

/** Both lingers: the locker's waiters' queue keeps its subscription 5 s, then the subscriber connection its channel 5 s. */
const LINGER = 10_000;
/**
 * How late the unsubscribe may be seen on a loaded 2-core machine: the hand-over to the waiter,
 * the 50 ms poll, a NUMSUB round trip and two timers that may each fire late while other
 * processes hold the CPU.
 */
const LATE = 6_000;

it('keeps a key’s subscription while waiters come back, and unsubscribes once the last one has been gone 10 s (two 5 s lingers)', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const holder = createLocker({ redis: server.client() });
  const waiter = createLocker({ redis: server.client(), retry: SLOW_POLL });
  const channel = '{lock:linger}:released';
  const numsub = async () => Number(((await admin.pubsub('NUMSUB', channel)) as [string, number])[1]);
  let leftAt = Number.NaN;
  for (let round = 0; round < 3; round++) {
    const held = await holder.acquire('linger', { ttl: 30_000 });
    const waiting = waiter.acquire('linger', { wait: 10_000 });
    await waiterSubscribed([admin], 'linger');
    // The waiter can leave its queue, which starts the lingers, only once this release is sent:
    // timed from here, the lingers are never under-counted, however late the acquire settles.
    leftAt = performance.now();
    await held.release();
    const next = await waiting;
    await next.release();
    // The waiter has left; the subscription lingers for the next one.
    expect(await numsub()).toBe(1);
  }
  // Three rounds of waiting, one subscription of the key's channel (and one of the locker's inbox).
  expect((await commandCalls(admin)).get('subscribe')).toBe(2);
  while ((await numsub()) !== 0 && performance.now() - leftAt < LINGER + LATE + 5_000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const unsubscribedAfter = performance.now() - leftAt;
  // Timers never fire early (a ms of rounding aside); only load makes them late.
  expect(unsubscribedAfter).toBeGreaterThanOrEqual(LINGER - 10);
  expect(unsubscribedAfter).toBeLessThan(LINGER + LATE);
  await holder.close();
  await waiter.close();
});
