import { createLocker, type Lock, LockLostError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { renewals } from '../support/renewals.js';

/** Timer lateness allowed on a loaded 2-core machine: the watchdog's timer fires at validUntil, not exactly on it. */
const TIMER_SLACK_MS = 100;

it('S8: a server blocked by DEBUG SLEEP for 2x the ttl: every handle is lost by its validUntil and stays lost', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const locker = createLocker({ redis, ttl: 600 });
  const locks: Lock[] = [];
  for (let i = 0; i < 5; i++) locks.push(await locker.acquire(`frozen:${i}`));
  const abortedAt = locks.map(
    (lock) =>
      new Promise<{ at: number; validUntil: number }>((resolve) =>
        lock.signal.addEventListener(
          'abort',
          () => resolve({ at: performance.now(), validUntil: lock.validUntil }),
          { once: true },
        ),
      ),
  );
  // Deadlines under test come from a renewal, not from the acquisitions.
  await renewals(locks.length);
  const sleepStarted = performance.now();
  const sleeping = server.debugSleep(1_200);
  const losses = await Promise.all(abortedAt);
  for (const { at, validUntil } of losses) {
    expect(validUntil).toBeLessThanOrEqual(sleepStarted + 600);
    expect(at).toBeLessThanOrEqual(validUntil + TIMER_SLACK_MS);
  }
  for (const lock of locks) {
    expect((lock.signal.reason as LockLostError).reason).toBe('expired');
    expect(() => lock.assertHeld()).toThrow(LockLostError);
  }
  await sleeping;
  // Renewals queued during the sleep run now; none may resurrect a key or a belief.
  await new Promise((resolve) => setTimeout(resolve, 300));
  for (const [i, lock] of locks.entries()) {
    expect(lock.validUntil).toBe(losses[i]!.validUntil);
    expect(() => lock.assertHeld()).toThrow(LockLostError);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    expect(await redis.exists(`{lock:frozen:${i}}`)).toBe(0);
  }
  const next = await locker.acquire('frozen:0', { ttl: 5_000, wait: 0 });
  expect(next.fence).toBeGreaterThan(locks[0]!.fence);
  await next.release();
  await Promise.all(locks.map((lock) => lock.release()));
  await locker.close();
});
