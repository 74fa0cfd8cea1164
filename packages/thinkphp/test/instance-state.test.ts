import { LockUnavailableError } from '@lock/core';
import { startProxy, startRedis, type TcpProxy, waitFor } from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { useRedis } from '../../core/test/legacy/fixture.js';

/** A lease long enough that nothing in a test ends by it: what frees a key is the code under test. */
const EXPIRE = 60;

/**
 * What a call may wait for Redis: the calls made while the proxy passes must fit in it on a loaded
 * machine (a 300 ms deadline failed a lock() while the server was frozen for 500 ms).
 */
const COMMAND_TIMEOUT = 1_000;

/** Who holds `key` by the owner record Node keeps beside it (PHP never reads it). */
function ownerOf(redis: Redis, key: string): Promise<string | null> {
  return redis.hget(`{${key}}:owner`, 'owner');
}

/**
 * A client that reaches the server through a proxy, failing fast while the proxy drops: ioredis
 * neither queues nor resends a command, so what reached Redis is only what the proxy let through.
 */
async function throughProxy(): Promise<{ admin: Redis; proxy: TcpProxy; redis: Redis }> {
  const server = await startRedis();
  onTestFinished(() => server.stop());
  const proxy = await startProxy({ target: server });
  onTestFinished(() => proxy.stop());
  const redis = new Redis({ ...proxy.redisOptions, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  redis.on('error', () => {});
  onTestFinished(() => redis.disconnect());
  await new Promise((ready) => redis.once('ready', ready));
  return { admin: server.client(), proxy, redis };
}

async function heal(proxy: TcpProxy, redis: Redis): Promise<void> {
  proxy.pass();
  await waitFor('the client to reconnect', async () => redis.status === 'ready');
}

describe('one Lock object across Redis failures', () => {
  it('lock() after an unlock() Redis did not answer finishes that unlock first, then locks afresh', async () => {
    const { admin, proxy, redis } = await throughProxy();
    const lock = new Lock('k', { redis, commandTimeout: COMMAND_TIMEOUT, expire: EXPIRE });
    expect(await lock.lock()).toBe(true);
    const first = lock.handle!;
    proxy.drop();
    await expect(lock.unlock()).rejects.toBeInstanceOf(LockUnavailableError);
    // Still down: the earlier hold is kept for the next try, and the key is still it.
    await expect(lock.lock()).rejects.toBeInstanceOf(LockUnavailableError);
    expect(lock.handle).toBe(first);
    expect(await ownerOf(admin, 'k')).toBe(first.owner);

    await heal(proxy, redis);
    expect(await lock.lock()).toBe(true);
    expect(lock.handle).not.toBe(first);
    expect(await ownerOf(admin, 'k')).toBe(lock.handle!.owner);
    await lock.unlock();
    expect(await admin.exists('k', '{k}:owner')).toBe(0);
  });

  it('a lock() Redis did not answer in time leaves nothing behind: its late grant is given back, and lock() again locks', async () => {
    const { admin, proxy, redis } = await throughProxy();
    const key = 'lock_goods:300';
    const lock = new Lock(key, { redis, commandTimeout: COMMAND_TIMEOUT, expire: EXPIRE });
    // Held, not lost: the attempt reaches Redis once the proxy passes again, after lock() gave up on it.
    proxy.blackhole();
    await expect(lock.lock()).rejects.toBeInstanceOf(LockUnavailableError);
    expect(lock.handle).toBeNull();

    await heal(proxy, redis);
    // The fence drawn says the attempt landed after all; the key gone, that it was given back.
    await waitFor(
      'the attempt lock() gave up on to land and be given back',
      async () => (await admin.get('{lock_goods:#}:fences')) === '1' && (await admin.exists(key)) === 0,
    );
    expect(await lock.lock()).toBe(true);
    expect(lock.handle!.fence).toBe(2);
    expect(await ownerOf(admin, key)).toBe(lock.handle!.owner);
    await lock.unlock();
    expect(await admin.exists(key, `{${key}}:owner`)).toBe(0);
  });

  it('wrap() with Redis gone by unlock time answers what fn answered, and the key ends with its lease', async () => {
    const { admin, proxy, redis } = await throughProxy();
    const options = { redis, commandTimeout: COMMAND_TIMEOUT, expire: EXPIRE };
    const ran = await Lock.wrap(
      'ran',
      () => {
        proxy.drop();
        return 'ran';
      },
      options,
    );
    expect(ran).toBe('ran');

    await heal(proxy, redis);
    const failure = new Error('the user error');
    await expect(
      Lock.wrap(
        'threw',
        () => {
          proxy.drop();
          throw failure;
        },
        options,
      ),
    ).rejects.toBe(failure);

    // Left to their lease, not to nothing: no key without a TTL.
    const lease = (EXPIRE + 1) * 1_000;
    expect(await admin.pttl('ran')).toBeGreaterThan(0);
    expect(await admin.pttl('ran')).toBeLessThanOrEqual(lease);
    expect(await admin.pttl('threw')).toBeGreaterThan(0);
    expect(await admin.pttl('threw')).toBeLessThanOrEqual(lease);
  });
});

describe('one Lock object used out of pairs', () => {
  const t = useRedis();

  it('two lock() calls without unlock(): the second is refused by the first, as in PHP, which stays held', async () => {
    const lock = new Lock('k', { redis: t.redis, expire: EXPIRE, retryMax: 1 });
    expect(await lock.lock()).toBe(true);
    const first = lock.handle!;
    expect(await lock.lock()).toBe(false);
    expect(lock.handle).toBe(first);
    expect(await ownerOf(t.redis, 'k')).toBe(first.owner);
    await lock.unlock();
    expect(await t.redis.exists('k', '{k}:owner')).toBe(0);
  });

  it('unlock() on a Lock that never locked leaves the key of the one that holds it', async () => {
    const holder = new Lock('k', { redis: t.redis, expire: EXPIRE });
    expect(await holder.lock()).toBe(true);
    await new Lock('k', { redis: t.redis }).unlock();
    expect(await ownerOf(t.redis, 'k')).toBe(holder.handle!.owner);
    expect(await t.redis.ttl('k')).toBeGreaterThan(0);
    await holder.unlock();
  });
});
