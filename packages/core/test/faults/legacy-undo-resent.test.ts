import { createLocker, LockUnavailableError, legacyProtocol } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

it('legacy format: the undo of a re-entry answered too late, resent by ioredis after a reconnect, takes off no hold of the outer section', async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server);
  const locker = createLocker({ redis: proxied.redis, protocol: legacyProtocol(), commandTimeout: 300 });
  const other = createLocker({ redis: server.client(), protocol: legacyProtocol() });
  const admin = server.client();
  // The server's pub/sub mode and replicas are asked once: before the proxy slows replies down.
  await (await locker.acquire('warm', { ttl: 10_000 })).release();

  await locker.using('k', { ttl: 20_000 }, async (outer) => {
    proxied.proxy.delay({ downstream: 600 });
    // The re-entry lands (two holds), but its answer comes after the command timeout: undone.
    await expect(locker.acquire('k', { wait: 0 })).rejects.toBeInstanceOf(LockUnavailableError);
    await waitFor(
      'the undo to take the re-entry off',
      async () => (await admin.hget('{lock:k}:owner', 'holds')) === '1',
    );
    // Its answer is still on the way when the connection drops: ioredis sends it again.
    proxied.proxy.drop();
    proxied.proxy.pass();
    // Commands run in order on a connection: once this is answered, the resent undo has run.
    await proxied.redis.ping();

    expect(await admin.hget('{lock:k}:owner', 'holds')).toBe('1');
    expect(await other.tryAcquire('k')).toBeNull();
    expect(outer.signal.aborted).toBe(false);
  });
  expect(await admin.exists('lock:k')).toBe(0);
  await locker.close();
  await other.close();
});
