import {
  type AcquireOptions,
  AcquireTimeoutError,
  createLocker,
  InvalidOptionError,
  type LockerOptions,
} from '@lock/core';
import { startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { callsBetween, commandCalls } from './faults/support/stats.js';

describe('retry.attempts', () => {
  // Each acquire attempt is one EVALSHA (its script is loaded by the first); a queued waiter's
  // cleanup is an EVAL, and the holder has a fixed lease, so nothing else sends EVALSHA.
  it.each(['auto', 'poll'] as const)(
    "pubSub '%s': with the lock held elsewhere, attempts: 3 sends exactly 3 attempts, then rejects with AcquireTimeoutError",
    async (pubSub) => {
      await using server = await startRedis();
      const admin = server.client();
      const holder = createLocker({ redis: server.client() });
      const held = await holder.acquire('k', { ttl: 60_000 });
      // Short polls: bounded by the wait alone, the call would send many more than 3.
      const waiter = createLocker({ redis: server.client(), pubSub, retry: { base: 5, max: 20 } });
      expect(await waiter.tryAcquire('k')).toBeNull();
      const before = await commandCalls(admin);
      const error = await waiter.acquire('k', { wait: 5_000, retry: { attempts: 3 } }).then(
        () => new Error('acquired a held lock'),
        (e: unknown) => e,
      );
      const sent = callsBetween(before, await commandCalls(admin), ['evalsha']);
      expect(error).toBeInstanceOf(AcquireTimeoutError);
      const timeout = error as AcquireTimeoutError;
      expect(timeout.limit).toBe('attempts');
      expect(timeout.attempts).toBe(3);
      expect(timeout.waited).toBeLessThan(5_000);
      expect(timeout.message).toMatch(
        /^gave up on lock "k" after 3 attempts \(the retry\.attempts limit\) and \d+ ms$/,
      );
      expect(sent).toBe(3);
      await held.release();
      await Promise.all([holder.close(), waiter.close()]);
    },
    20_000,
  );

  it('a locker-wide limit applies to every call, and a wait that runs out first still says wait', async () => {
    await using server = await startRedis();
    const holder = createLocker({ redis: server.client() });
    const held = await holder.acquire('k', { ttl: 60_000 });
    const waiter = createLocker({ redis: server.client(), retry: { base: 5, max: 20, attempts: 2 } });
    await expect(waiter.acquire('k', { wait: 5_000 })).rejects.toMatchObject({
      name: 'AcquireTimeoutError',
      limit: 'attempts',
      attempts: 2,
    });
    // A per-call retry that changes only the backoff keeps the locker's limit.
    await expect(waiter.acquire('k', { wait: 5_000, retry: { base: 10 } })).rejects.toMatchObject({
      limit: 'attempts',
      attempts: 2,
    });
    const timedOut = await waiter.acquire('k', { wait: 30, retry: { attempts: 1_000 } }).catch((e) => e);
    expect(timedOut).toBeInstanceOf(AcquireTimeoutError);
    expect(timedOut.limit).toBe('wait');
    expect(timedOut.message).toMatch(/^timed out after \d+ ms and \d+ attempts waiting for lock "k"$/);
    await held.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  const BAD: [unknown, string][] = [
    [0, '0'],
    [-1, '-1'],
    [1.5, '1.5'],
    [Number.NaN, 'NaN'],
    [Number.NEGATIVE_INFINITY, '-Infinity'],
    [2 ** 53, '9007199254740992'],
    ['3', '"3"'],
    [null, 'null'],
  ];

  it.each(BAD)(
    'refuses attempts %s naming retry.attempts, on acquire, tryAcquire and createLocker, before any write',
    async (attempts, shown) => {
      await using server = await startRedis();
      const redis = server.client();
      const locker = createLocker({ redis });
      const before = await commandCalls(redis);
      const retry = { attempts } as AcquireOptions['retry'];
      const refusals = [
        await locker.acquire('k', { retry }).catch((e: unknown) => e),
        await locker.tryAcquire('k', { retry }).catch((e: unknown) => e),
        (() => {
          try {
            createLocker({ redis, retry } as LockerOptions);
          } catch (error) {
            return error;
          }
        })(),
      ];
      for (const error of refusals) {
        expect(error).toBeInstanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option).toBe('retry.attempts');
        expect((error as InvalidOptionError).value).toStrictEqual(attempts);
        expect((error as InvalidOptionError).message).toBe(
          `invalid option "retry.attempts": ${shown} (expected a positive integer, or Infinity)`,
        );
      }
      expect(await redis.dbsize()).toBe(0);
      expect(callsBetween(before, await commandCalls(redis), ['evalsha', 'eval'])).toBe(0);
      await locker.close();
    },
  );
});
