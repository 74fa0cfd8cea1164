import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, type Lock, type LockLostError } from '@lock/core';
import { proxiedClient, type RedisServer, startRedis, waitFor } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failedRenewal } from '../support/renewals.js';

/** Below the registration lease a renewed lock is handed over for (2 s by default). */
const HANDED_VALIDITY_MS = 2_000;
const COMMAND_TIMEOUT = 300;

/** Whichever comes first for `lock`: a watchdog renewal that Redis answered, or its loss. */
function renewedOrLost(lock: Lock): Promise<'renewed' | LockLostError> {
  return new Promise((resolve) => {
    const onExtend = (message: unknown) => {
      const event = message as { key: string; renewal: boolean };
      if (!event.renewal || event.key !== lock.key) return;
      settle('renewed');
    };
    const onAbort = () => settle(lock.signal.reason as LockLostError);
    const settle = (outcome: 'renewed' | LockLostError) => {
      unsubscribe('lock:extend', onExtend);
      lock.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    subscribe('lock:extend', onExtend);
    lock.signal.addEventListener('abort', onAbort, { once: true });
  });
}

describe('a failed renewal', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('is retried within the short validity of a renewed lock handed over by a release', async () => {
    const admin = server.client();
    await using waiterLink = await proxiedClient(server);
    const waiters = createLocker({
      redis: waiterLink.redis,
      replication: false,
      commandTimeout: COMMAND_TIMEOUT,
    });
    const holders = createLocker({ redis: server.client(), replication: false });
    const held = await holders.acquire('handed', { ttl: 20_000 });
    // No ttl: the lock is renewed, so the release hands it over for the registration lease only.
    const waiting = waiters.acquire('handed', { wait: 10_000 });
    await waitFor('the waiter to be queued and subscribed', async () => {
      const [, subscribers] = (await admin.pubsub('NUMSUB', '{lock:handed}:released')) as [string, number];
      return Number(subscribers) === 1;
    });
    await held.release();
    const lock = await waiting;
    // The watchdog renews a handed-over lock at once: the first renewal meets the blackhole.
    waiterLink.proxy.blackhole();
    expect(lock.remaining()).toBeLessThan(HANDED_VALIDITY_MS);
    const outcome = renewedOrLost(lock);
    await failedRenewal();
    waiterLink.proxy.pass();
    // A retry a tenth of the 30 s lease later (3 s) would come after the validity ended.
    expect(await outcome).toBe('renewed');
    expect(lock.signal.aborted).toBe(false);
    expect(lock.remaining()).toBeGreaterThan(HANDED_VALIDITY_MS);
    expect(await admin.pttl('{lock:handed}')).toBeGreaterThan(HANDED_VALIDITY_MS);
    expect(await lock.release()).toBe('released');
    await waiters.close();
    await holders.close();
  });
});
