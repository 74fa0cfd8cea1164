import { createLocker, LockUnavailableError, legacyProtocol, tokenProtocol } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

/**
 * An explicit owner's attempt answered after `commandTimeout` is undone when its grant comes
 * back. By then that grant's lease may have ended and the same owner taken the key again: the
 * undo must take off only a hold that attempt added, never the owner's next one.
 */
for (const [name, protocol, lockKey] of [
  ['legacy', () => legacyProtocol(), 'lock:k'],
  ['token', () => tokenProtocol(), '{lock:k}'],
] as const) {
  it(`${name}: the undo of a grant answered after its lease ended leaves the owner's next hold alone`, async () => {
    await using server = await startRedis();
    await using proxied = await proxiedClient(server);
    const admin = server.client();
    const locker = createLocker({ redis: proxied.redis, protocol: protocol(), commandTimeout: 1_000 });
    const other = createLocker({ redis: server.client(), protocol: protocol() });
    await (await locker.acquire('warm', { ttl: 10_000 })).release();
    // Replies held back: requests still reach Redis.
    proxied.proxy.delay({ downstream: 60_000 });
    const first = locker.acquire('k', { owner: 'w', ttl: 300, wait: 0 });
    await waitFor('the first attempt applied', async () => (await admin.exists(lockKey)) === 1, {
      interval: 5,
    });
    await expect(first).rejects.toBeInstanceOf(LockUnavailableError);
    await waitFor('the first grant expired', async () => (await admin.exists(lockKey)) === 0, {
      interval: 5,
    });
    const second = locker.acquire('k', { owner: 'w', ttl: 20_000, wait: 0 });
    await waitFor('the second attempt applied', async () => (await admin.exists(lockKey)) === 1, {
      interval: 5,
    });
    // Both answers come now: the first (a grant given up on: undone), then the second (in time).
    proxied.proxy.pass();
    const lock = await second;
    // Behind the undo sent on the late grant, on the same connection: once answered, it has run.
    await proxied.redis.ping();
    await proxied.redis.ping();
    expect(await admin.exists(lockKey), 'the next hold of w was deleted under it').toBe(1);
    expect(await other.tryAcquire('k')).toBeNull();
    expect(lock.remaining()).toBeGreaterThan(0);
    await lock.release();
    await Promise.all([locker.close(), other.close()]);
  }, 30_000);
}
