import { createLocker, LockUnavailableError } from '@lock/core';
import { proxiedClient, startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { deployment } from '../support/deployments.js';

/**
 * `close()` releases the handles nobody released. ioredis resends a command whose reply a
 * reconnect lost, so that release may run twice: named by a release id, the copy must not take
 * off a second count, here the hold another locker sharing the explicit owner still uses.
 */
it("close()'s release, resent after a lost reply, leaves another locker's hold of the same owner", async () => {
  await using server = await startRedis();
  await using cut = await proxiedClient(server);
  const closing = createLocker({ redis: cut.redis, replication: false });
  const staying = createLocker({ redis: server.client(), replication: false });
  const other = createLocker({ redis: server.client(), replication: false });
  await (await closing.acquire('warm-up', { ttl: 1_000 })).release();
  await closing.acquire('k', { ttl: 20_000, owner: 'svc' });
  const kept = await staying.acquire('k', { ttl: 20_000, owner: 'svc' });
  expect((await other.inspect('k')).holds).toBe(2);
  // The release runs on the server, its reply is lost, and ioredis sends it again once reconnected.
  cut.proxy.resetAfter(0, 'downstream', 1);
  await closing.close();
  // Behind the resent release on the same connection: once answered, the copy has run.
  await cut.redis.ping();
  expect(cut.proxy.resets).toBe(1);
  expect((await other.inspect('k')).holds).toBe(1);
  expect(await other.tryAcquire('k', { ttl: 1_000 })).toBeNull();
  expect(kept.remaining()).toBeGreaterThan(0);
  await kept.release();
  await Promise.all([staying.close(), other.close()]);
});

/**
 * A handle's release that got no answer may still have landed, so `close()` sends it again under
 * its own id, which the format applies once: a release under a new id would take off a second
 * count, here the hold another locker sharing the explicit owner still uses.
 */
it.each([deployment('token'), deployment('legacy ms')])(
  "close() retries a handle's failed release under its own id, leaving another locker's hold of the same owner ($name)",
  async (target) => {
    await using server = await startRedis();
    await using cut = await proxiedClient(server);
    const closing = target.create([cut.redis], { commandTimeout: 300 });
    const other = target.create([server.client()]);
    const observer = target.create([server.client()]);
    await closing.acquire('k', { ttl: 60_000, owner: 'svc' });
    const inner = await closing.acquire('k', { ttl: 60_000, owner: 'svc' });
    const kept = await other.acquire('k', { ttl: 60_000, owner: 'svc' });
    expect(kept.holds).toBe(3);

    cut.proxy.blackhole();
    await expect(inner.release()).rejects.toBeInstanceOf(LockUnavailableError);
    // The partition heals: the release held on the way lands after all.
    cut.proxy.pass();
    await cut.redis.ping();
    expect((await observer.inspect('k')).holds).toBe(2);

    await closing.close();
    expect((await observer.inspect('k')).holds).toBe(1);
    expect(await observer.tryAcquire('k')).toBeNull();
    expect(await kept.release()).toBe('released');
    await Promise.all([other.close(), observer.close()]);
  },
);
