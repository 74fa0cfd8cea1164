import { createLocker, LockLostError } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

// A hold the engine gave up (its master changed, its lease ran out by our clock, its renewals
// failed) may still be in Redis: its release is still sent, by the owner's name, so the key is
// freed now instead of staying held by nobody until Redis expires it.

it('releases a hold lost to a master change that Redis still has (restart with persistence)', async () => {
  await using server = await startRedis({ persistence: true });
  const redis = server.client();
  const locker = createLocker({ redis });
  const observer = createLocker({ redis: server.client() });
  const lock = await locker.acquire('k', { ttl: 30_000 });

  await server.restart();
  await waitFor('the hold to be lost', async () => lock.signal.aborted, { timeout: 10_000 });
  expect(lock.signal.reason).toEqual(expect.objectContaining({ name: 'LockLostError', reason: 'failover' }));
  // The appendonly file brought it back: the lock is still ours in Redis.
  expect((await observer.inspect('k')).owner).toBe(lock.owner);

  expect(await lock.release()).toBe('released');
  expect(await observer.isLocked('k')).toBe(false);
  await locker.close();
  await observer.close();
});

it("sends nothing for an explicit owner's lost hold: the name may be another handle's too", async () => {
  await using server = await startRedis({ persistence: true });
  const locker = createLocker({ redis: server.client() });
  const observer = createLocker({ redis: server.client() });
  const lock = await locker.acquire('k', { ttl: 30_000, owner: 'job-42' });

  await server.restart();
  await waitFor('the hold to be lost', async () => lock.signal.aborted, { timeout: 10_000 });
  expect(lock.signal.reason).toBeInstanceOf(LockLostError);

  expect(await lock.release()).toBe('not-owner');
  expect((await observer.inspect('k')).owner).toBe('job-42');
  await locker.close();
  await observer.close();
});

it('answers not-owner, without rejecting, when the release of a lost hold cannot reach Redis', async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server);
  const locker = createLocker({ redis: proxied.redis, commandTimeout: 200 });
  const lock = await locker.acquire('k', { ttl: 300 });
  proxied.proxy.blackhole();
  await waitFor('the hold to be lost', async () => lock.signal.aborted);
  expect(await lock.release()).toBe('not-owner');
  proxied.proxy.pass();
  await locker.close();
});
