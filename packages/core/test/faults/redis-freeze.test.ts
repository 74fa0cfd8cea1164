import { createLocker, type Lock, LockLostError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { controlRenewals, renewals } from '../support/renewals.js';

it('S8: a server blocked by DEBUG SLEEP for 5x the ttl: every handle is lost from its own clock while it sleeps, and stays lost', async () => {
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
  const wokeAt = server.debugSleep(3_000).then(() => performance.now());
  const losses = await Promise.all(abortedAt);
  for (const lock of locks) {
    expect((lock.signal.reason as LockLostError).reason).toBe('expired');
    expect(() => lock.assertHeld()).toThrow(LockLostError);
  }
  const woke = await wokeAt;
  for (const { at, validUntil } of losses) {
    expect(validUntil).toBeLessThanOrEqual(sleepStarted + 600);
    // Not before its validity ended, and seconds before Redis could answer anything: the
    // holder's own clock told it.
    expect(at).toBeGreaterThanOrEqual(validUntil);
    expect(at).toBeLessThan(woke);
  }
  // The renewals queued during the sleep ran before the control lock's, sent after them on the
  // same connection; two of its rounds outlast any renewal a timer could still send. None may
  // resurrect a key or a belief.
  expect(await controlRenewals(locker, 2)).toEqual([1, 1]);
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
