import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker } from '@lock/core';
import { pollingAttemptsBound, startProxy, startRedis, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { attemptTimes, sleepsAtMax, until, untilSubscribed } from '../support/waiter-queue.js';

const RETRY = { base: 50, max: 400, jitter: 0.5 };
const CHANNEL = '{lock:quiet}:released';
/** The waiters' wait, far shorter than the holder's lease: only polling can find the lock free in time. */
const WAIT = 20_000;
/** Generous: a waiter polls at most every retry.max; the alternative, the holder's expiry, is a minute away. */
const FOUND_WITHIN = RETRY.max + 5_000;

it('S30: waiters whose subscriber connection was lost still get the lock by polling, without a busy loop', async () => {
  await using server = await startRedis();
  // The waiters' subscriber connection (the duplicate of their client) goes through a link the
  // test cuts; dropped, it refuses every reconnection, so no release message can reach them.
  await using subscriberLink = await startProxy({ target: server });
  const admin = server.client();
  const waiterRedis = server.client();
  waiterRedis.duplicate = (override) =>
    new Redis({ ...waiterRedis.options, ...override, ...subscriberLink.redisOptions });
  const holder = createLocker({ redis: server.client() });
  const waiters = createLocker({ redis: waiterRedis, retry: RETRY });
  const attempts = attemptTimes(waiterRedis, '{lock:quiet}', ([owner]) => owner!);
  const acquisitions: { waited: number; attempts: number; at: number }[] = [];
  const onAcquire = (message: unknown) => {
    const { key, waited, attempts } = message as { key: string; waited: number; attempts: number };
    if (key === 'quiet') acquisitions.push({ waited, attempts, at: performance.now() });
  };
  try {
    const held = await holder.acquire('quiet', { ttl: 60_000 });
    subscribe('lock:acquire', onAcquire);
    const done = Array.from({ length: 3 }, () =>
      waiters.using('quiet', { wait: WAIT }, async (lock) => lock.fence),
    );
    await untilSubscribed(admin, CHANNEL, 1);
    // Let the waiters' backoff grow to retry.max: the case where a lost message costs most. A
    // waiter queued in Redis sleeps that long from its attempt after the join, its second.
    await waitFor(
      'every waiter sleeping at retry.max',
      async () =>
        attempts.size === 3 && [...attempts.values()].every((times) => sleepsAtMax(times, RETRY, 3)),
      { timeout: 10_000, interval: 10 },
    );
    subscriberLink.drop();
    await until(
      async () => Number(((await admin.pubsub('NUMSUB', CHANNEL)) as [string, number])[1]) === 0,
      'the subscriber connection to be gone',
    );
    await held.release();
    const releasedAt = performance.now();

    const fences = await Promise.all(done);
    expect(new Set(fences).size).toBe(3);
    expect(fences.every((fence) => fence > held.fence)).toBe(true);
    const first = acquisitions.filter((a) => a.at >= releasedAt).sort((a, b) => a.at - b.at)[0]!;
    expect(first.at - releasedAt).toBeLessThanOrEqual(FOUND_WITHIN);
    expect(acquisitions).toHaveLength(3);
    for (const { waited, attempts } of acquisitions) {
      // Each later waiter may be woken once per release before its turn.
      expect(attempts).toBeLessThanOrEqual(pollingAttemptsBound(RETRY, waited, 2));
    }
  } finally {
    unsubscribe('lock:acquire', onAcquire);
    await holder.close();
    await waiters.close();
  }
}, 60_000);
