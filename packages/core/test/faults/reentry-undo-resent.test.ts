import { createLocker, LockUnavailableError, legacyProtocol, tokenProtocol } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';

/** Per format: how it is made, the outer hold's count as Redis keeps it, and its lock key. */
const formats = [
  {
    name: 'token',
    protocol: () => tokenProtocol(),
    holds: (admin: Redis, owner: string) => admin.hget('{lock:k}', owner),
    lockKey: '{lock:k}',
  },
  {
    name: 'legacy',
    protocol: () => legacyProtocol(),
    holds: (admin: Redis) => admin.hget('{lock:k}:owner', 'holds'),
    lockKey: 'lock:k',
  },
];

for (const { name, protocol, holds, lockKey } of formats) {
  it(`${name}: the undo of a re-entry answered too late, resent by ioredis after a reconnect, takes off no hold of the outer section`, async () => {
    await using server = await startRedis();
    await using proxied = await proxiedClient(server);
    const locker = createLocker({ redis: proxied.redis, protocol: protocol(), commandTimeout: 300 });
    const other = createLocker({ redis: server.client(), protocol: protocol() });
    const admin = server.client();
    // The server's pub/sub mode and replicas are asked once: before the proxy slows replies down.
    await (await locker.acquire('warm', { ttl: 10_000 })).release();

    await locker.using('k', { ttl: 20_000 }, async (outer) => {
      proxied.proxy.delay({ downstream: 600 });
      // The re-entry lands (two holds), but its answer comes after the command timeout: undone.
      await expect(locker.acquire('k', { wait: 0 })).rejects.toBeInstanceOf(LockUnavailableError);
      await waitFor(
        'the undo to take the re-entry off',
        async () => (await holds(admin, outer.owner)) === '1',
      );
      // Its answer is still on the way when the connection drops: ioredis sends it again.
      proxied.proxy.drop();
      proxied.proxy.pass();
      // Commands run in order on a connection: once this is answered, the resent undo has run.
      await proxied.redis.ping();

      expect(await holds(admin, outer.owner)).toBe('1');
      expect(await other.tryAcquire('k')).toBeNull();
      expect(outer.signal.aborted).toBe(false);
    });
    expect(await admin.exists(lockKey)).toBe(0);
    await locker.close();
    await other.close();
  });
}
