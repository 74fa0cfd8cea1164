import { createLocker, LockAbortError, type Locker } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { countScripts, SLOW_POLL, until, untilQueued, untilSubscribed } from '../support/waiter-queue.js';

/**
 * The waiters' Redis user may not subscribe to any channel at first (`resetchannels`): their
 * SUBSCRIBE fails with NOPERM, as a subscription that fails for any reason would, while the lock
 * commands flow. The test then grants the channels, as an operator fixing the ACL would.
 */
const CHANNEL = '{lock:k}:released';
let server: RedisServer;
let admin: Redis;
let waiterRedis: Redis;
let holder: Locker;
beforeEach(async () => {
  server = await startRedis();
  admin = server.client();
  await admin.call('ACL', 'SETUSER', 'waiter', 'reset', 'on', '>pw', '~*', 'resetchannels', '+@all');
  waiterRedis = new Redis({ ...server.redisOptions, username: 'waiter', password: 'pw' });
  waiterRedis.on('error', () => {});
  holder = createLocker({ redis: server.client() });
});
afterEach(async () => {
  await holder.close();
  waiterRedis.disconnect();
  await server.stop();
});

/**
 * How many SUBSCRIBEs of a lock's channel the ACL refused so far (ACL LOG aggregates them into one
 * entry's count per channel). The locker's inbox, refused alongside, is left out.
 */
async function refusedSubscriptions(): Promise<number> {
  const entries = (await admin.call('ACL', 'LOG')) as (string | number)[][];
  let refused = 0;
  for (const entry of entries) {
    const field = (name: string) => entry[entry.indexOf(name) + 1];
    if (field('reason') === 'channel' && String(field('object')).endsWith(':released')) {
      refused += Number(field('count'));
    }
  }
  return refused;
}

const grantChannels = () => admin.call('ACL', 'SETUSER', 'waiter', 'allchannels');

it('a waiter whose subscription failed subscribes again at its next refused attempt, and hears releases from then on', async () => {
  const held = await holder.acquire('k', { ttl: 60_000 });
  const locker = createLocker({ redis: waiterRedis, retry: { base: 200, max: 200, jitter: 0 } });
  const scripts = countScripts(waiterRedis);
  const waiting = locker.acquire('k', { wait: 30_000 });
  await untilQueued(admin, 'k', 1);
  await until(async () => (await refusedSubscriptions()) >= 1, 'the subscription to fail');
  const attemptsBefore = scripts();
  await until(async () => scripts() >= attemptsBefore + 2, 'two more polls');
  await grantChannels();
  // Before, a waiter whose subscription failed polled for the rest of its wait, never subscribed.
  await untilSubscribed(admin, CHANNEL, 1);
  await held.release();
  const lock = await waiting;
  expect(lock.fence).toBeGreaterThan(held.fence);
  await lock.release();
  await locker.close();
});

it('a new subscription of the key takes along the waiters of the one that failed: a release that grants the first is heard', async () => {
  const held = await holder.acquire('k', { ttl: 60_000 });
  // Polls once a minute: only the release message can hand it the lock within the test.
  const locker = createLocker({ redis: waiterRedis, retry: SLOW_POLL });
  const scripts = countScripts(waiterRedis);
  const first = locker.acquire('k', { wait: 60_000 });
  await untilQueued(admin, 'k', 1);
  // Its join failed, and so did the join again after the retry that followed: it now sleeps,
  // rather than try and subscribe again in a loop.
  await until(async () => (await refusedSubscriptions()) >= 2, 'both subscriptions to fail');
  const asleep = scripts();
  // A waiter on another key goes through the same attempt, refused join, attempt, refused join,
  // on the same connections: a first waiter trying again in a loop would be refused again meanwhile.
  const other = await holder.acquire('other', { ttl: 60_000 });
  const abandon = new AbortController();
  const otherWaiting = locker.acquire('other', { wait: 60_000, signal: abandon.signal });
  await until(async () => (await refusedSubscriptions()) >= 4, "the other waiter's subscriptions to fail");
  expect([scripts(), await refusedSubscriptions()]).toEqual([asleep + 2, 4]);
  abandon.abort();
  await expect(otherWaiting).rejects.toBeInstanceOf(LockAbortError);
  await other.release();
  await grantChannels();
  const second = locker.acquire('k', { wait: 60_000 });
  await untilQueued(admin, 'k', 2);
  await untilSubscribed(admin, CHANNEL, 1);
  // The release writes the lock for the first in line and says so on the channel.
  await held.release();
  const outcome = await Promise.race([
    first.then(() => 'acquired'),
    new Promise((resolve) => setTimeout(resolve, 10_000, 'still waiting (for its next poll, a minute on)')),
  ]);
  expect(outcome).toBe('acquired');
  await (await first).release();
  await (await second).release();
  await locker.close();
});
