import {
  createLocker,
  createRedlock,
  type LockProtocol,
  LockUnavailableError,
  legacyProtocol,
  tokenProtocol,
} from '@lock/core';
import { proxiedClient, startMasters, startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';

/**
 * S5b: the release of one of two holds runs on Redis, but its answer comes back late (past the
 * command timeout, and the caller retries as `LockUnavailableError` invites) or not at all (the
 * connection resets and ioredis resends the command on the next one). One hold must come off,
 * not two: a second would free the lock under the handle that still holds it.
 */
describe.each<[string, () => LockProtocol]>([
  ['token', () => tokenProtocol()],
  ['legacy', () => legacyProtocol({ unit: 'ms' })],
])('S5b: a %s lock held twice by one owner, one release answered late or lost', (_, protocol) => {
  async function setup(commandTimeout: number) {
    const server = await startRedis();
    const { proxy, redis, close } = await proxiedClient(server);
    const locker = createLocker({ redis, protocol: protocol(), replication: false, commandTimeout });
    const observer = createLocker({ redis: server.client(), protocol: protocol(), replication: false });
    const key = 's5b';
    // The release script is loaded first: a NOSCRIPT answer would be late too, and nothing would land.
    await (await locker.acquire(`${key}:warm`, { ttl: 10_000 })).release();
    const first = await locker.acquire(key, { ttl: 10_000, owner: 'o' });
    const second = await locker.acquire(key, { ttl: 10_000, owner: 'o' });
    expect(second.holds).toBe(2);
    return {
      proxy,
      first,
      second,
      holds: async () => (await observer.inspect(key)).holds,
      otherGets: async () => (await observer.tryAcquire(key, { ttl: 1_000 })) !== null,
      async [Symbol.asyncDispose]() {
        await locker.close();
        await observer.close();
        await close();
        await server.stop();
      },
    };
  }

  it('a retry after LockUnavailableError takes off no second hold', async () => {
    await using run = await setup(300);
    run.proxy.delay({ downstream: 1_000 });
    await expect(run.second.release()).rejects.toBeInstanceOf(LockUnavailableError);
    expect(await run.holds()).toBe(1);
    run.proxy.pass();
    expect(await run.second.release()).toBe('held');
    expect(await run.holds()).toBe(1);
    expect(await run.otherGets()).toBe(false);
    expect(await run.first.release()).toBe('released');
    expect(await run.holds()).toBe(0);
  });

  it('a resend by ioredis after a connection reset takes off no second hold', async () => {
    await using run = await setup(5_000);
    run.proxy.resetAfter(0, 'downstream', 1);
    expect(await run.second.release()).toBe('held');
    expect(run.proxy.resets).toBe(1);
    expect(await run.holds()).toBe(1);
    expect(await run.otherGets()).toBe(false);
    expect(await run.first.release()).toBe('released');
  });
});

it('S5b: RedLock over 3 masters, one release of a lock held twice answered late everywhere, then retried', async () => {
  await using masters = await startMasters(3);
  const links = await Promise.all(masters.servers.map((server) => proxiedClient(server)));
  const proxies = links.map((link) => link.proxy);
  const locker = createRedlock({ clients: links.map((link) => link.redis), commandTimeout: 300 });
  const observer = createRedlock({ clients: masters.clients() });
  try {
    // The release script is loaded first on every master: a late NOSCRIPT would land nothing.
    await (await locker.acquire('s5b:warm', { ttl: 10_000 })).release();
    const first = await locker.acquire('s5b', { ttl: 10_000, owner: 'o' });
    const second = await locker.acquire('s5b', { ttl: 10_000, owner: 'o' });
    expect(second.holds).toBe(2);
    for (const proxy of proxies) proxy.delay({ downstream: 1_000 });
    await expect(second.release()).rejects.toThrow();
    expect((await observer.inspect('s5b')).holds).toBe(1);
    for (const proxy of proxies) proxy.pass();
    expect(await second.release()).toBe('held');
    expect((await observer.inspect('s5b')).holds).toBe(1);
    expect(await observer.tryAcquire('s5b', { ttl: 1_000 })).toBeNull();
    expect(await first.release()).toBe('released');
  } finally {
    await locker.close();
    await observer.close();
    await Promise.all(links.map((link) => link.close()));
  }
});
