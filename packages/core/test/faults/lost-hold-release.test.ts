import { createLocker } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { deployment } from '../support/deployments.js';

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

  // Lost is the answer; the key is freed in the background.
  expect(await lock.release()).toBe('not-owner');
  await waitFor('the key to be freed', async () => !(await observer.isLocked('k')));
  await locker.close();
  await observer.close();
});

it('does not release a lost hold whose owner name a re-entry granted afresh now holds', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const locker = createLocker({ redis });
  const observer = createLocker({ redis: server.client() });
  const admin = server.client();
  // Seen inside the section, asserted after it: the section's own outcome is the outer loss.
  const seen: Record<string, unknown> = {};
  const outcome = await locker
    .using('k', { ttl: 30_000 }, async (outer) => {
      // Released the moment it is lost: from inside the grant of the re-entry that loses it.
      outer.signal.addEventListener('abort', () => void outer.release());
      // Redis loses the key (an eviction, a DEL, a failover nobody noticed): the re-entry below is
      // granted afresh, a hold of its own under the outer section's owner, and the outer one is lost.
      await admin.del('{lock:k}');
      const inner = await locker.acquire('k', { ttl: 30_000 });
      seen.sameOwner = inner.owner === outer.owner;
      seen.outerLost = outer.signal.aborted;
      seen.outerRelease = await outer.release();
      // Anything that release sent is on the locker's connection by now, ahead of this PING.
      await new Promise((resolve) => setImmediate(resolve));
      await redis.ping();
      seen.innerStillOwns = (await observer.inspect('k')).owner === inner.owner;
      seen.otherGotIt = (await observer.tryAcquire('k')) !== null;
      await inner.release();
    })
    .then(
      () => 'resolved',
      (error: unknown) => error,
    );
  // Deleted while its lease still ran: taken from it, not expired.
  expect(outcome).toEqual(expect.objectContaining({ name: 'LockLostError', reason: 'taken' }));
  expect(seen).toEqual({
    sameOwner: true,
    outerLost: true,
    outerRelease: 'not-owner',
    innerStillOwns: true,
    otherGotIt: false,
  });
  await locker.close();
  await observer.close();
});

it.each([deployment('token'), deployment('legacy ms')])(
  "gives back an explicit owner's lost hold by its attempt: the owner's next hold is then its only count ($name)",
  async (target) => {
    await using server = await startRedis({ persistence: true });
    const locker = target.create([server.client()]);
    const observer = target.create([server.client()]);
    const lock = await locker.acquire('k', { ttl: 60_000, owner: 'job-42' });

    await server.restart();
    await waitFor('the hold to be lost', async () => lock.signal.aborted, { timeout: 10_000 });
    expect(lock.signal.reason).toEqual(
      expect.objectContaining({ name: 'LockLostError', reason: 'failover' }),
    );
    expect(await lock.release()).toBe('not-owner');

    // The same owner locks again (a Redisson thread does): whether its attempt lands before or after
    // the lost hold's undo, its release frees the key, which the lost count would keep for 60 s.
    const again = await locker.acquire('k', { ttl: 60_000, owner: 'job-42' });
    await again.release();
    await waitFor('the key to be freed', async () => !(await observer.isLocked('k')), { timeout: 5_000 });
    await locker.close();
    await observer.close();
  },
);

it("undoes only a lost explicit hold's handles not released: a count taken under the name since stays", async () => {
  await using server = await startRedis({ persistence: true });
  await using proxied = await proxiedClient(server);
  const locker = createLocker({ redis: proxied.redis });
  const observer = createLocker({ redis: server.client() });
  const outer = await locker.acquire('k', { ttl: 60_000, owner: 'job-42' });
  const inner = await locker.acquire('k', { ttl: 60_000, owner: 'job-42' });
  expect(await inner.release()).toBe('held');

  // The locker hears of the restart only once the proxy passes again: meanwhile another locker
  // takes the key under the same name, counted beside the outer hold the appendonly file kept.
  proxied.proxy.blackhole();
  await server.restart();
  // Its first lock learns the new master's stamp (a grant it finds stamped by another master is
  // undone and tried again): then it takes the key in one attempt.
  const other = createLocker({ redis: server.client() });
  await (await other.acquire('warm-up')).release();
  const taken = await other.acquire('k', { ttl: 60_000, owner: 'job-42' });
  expect(taken.holds).toBe(2);
  proxied.proxy.pass();
  await waitFor('the outer hold to be lost', async () => outer.signal.aborted, { timeout: 10_000 });
  // close() waits for the lost hold's undo.
  await locker.close();

  // The outer hold's count went; the inner one's was released already; the other locker's stays.
  expect(await observer.tryAcquire('k')).toBeNull();
  expect(await taken.release()).toBe('released');
  expect(await observer.isLocked('k')).toBe(false);
  await other.close();
  await observer.close();
});

it('answers not-owner at once when the release of a lost hold cannot reach Redis', async () => {
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
