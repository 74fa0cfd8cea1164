import { LockUnavailableError } from '@lock/core';
import { startProxy, startRedis, waitFor } from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';

it('an unlock() Redis did not answer can be retried: the second one releases the lock', async () => {
  await using server = await startRedis();
  await using proxy = await startProxy({ target: server });
  const redis = new Redis({ ...proxy.redisOptions, maxRetriesPerRequest: 0, enableOfflineQueue: false });
  redis.on('error', () => {});
  await new Promise((ready) => redis.once('ready', ready));
  // A deadline the lock() while the proxy passes fits in on a loaded machine (300 ms failed it
  // with the server frozen for 500 ms); the dropped unlock fails at once, refused.
  const lock = new Lock('retried', { redis, commandTimeout: 1_000, expire: 60 });
  expect(await lock.lock()).toBe(true);
  // Refused connections: the release never reaches Redis, and ioredis does not keep it for later.
  proxy.drop();
  await expect(lock.unlock()).rejects.toBeInstanceOf(LockUnavailableError);
  expect(await server.client().exists('retried')).toBe(1);
  proxy.pass();
  await waitFor('the client to reconnect', async () => redis.status === 'ready');
  await expect(lock.unlock()).resolves.toBeUndefined();
  expect(await server.client().exists('retried')).toBe(0);
  expect(lock.handle).toBeNull();
  redis.disconnect();
  await Lock.disconnect();
});
