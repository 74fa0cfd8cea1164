import { createLocker, InvalidKeyError, ReplicationError, UnsafeServerError } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A backend sees only the Redis resource (prefix + key); the caller must see the key it gave.
describe("errors a backend raises name the caller's key", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('ReplicationError: no replica confirms the grant', async () => {
    const locker = createLocker({ redis: server.client(), replication: { replicas: 1, timeout: 50 } });
    const error = await locker.acquire('orders:1', { ttl: 5_000, wait: 0 }).catch((e: unknown) => e);
    await locker.close();
    expect(error).toBeInstanceOf(ReplicationError);
    expect(error).toMatchObject({
      key: 'orders:1',
      code: 'ERR_LOCK_NOT_REPLICATED',
      wanted: 1,
      confirmed: 0,
    });
    expect((error as Error).message).toBe(
      'lock "orders:1" was confirmed by 0 of 1 replicas, so it was not acquired',
    );
    // Still where the backend raised it, under the new message.
    expect((error as Error).stack).toMatch(
      /^ReplicationError: lock "orders:1" was confirmed[\s\S]*single\.ts/,
    );
  });

  it("UnsafeServerError: eviction: 'refuse' on a server that may evict", async () => {
    await using risky = await startRedis();
    await risky.client().config('SET', 'maxmemory-policy', 'allkeys-lru');
    const locker = createLocker({ redis: risky.client(), eviction: 'refuse', prefix: 'app:' });
    const error = await locker.acquire('orders:2', { wait: 0 }).catch((e: unknown) => e);
    await locker.close();
    expect(error).toBeInstanceOf(UnsafeServerError);
    expect(error).toMatchObject({ key: 'orders:2', code: 'ERR_LOCK_UNSAFE_SERVER' });
    expect((error as Error).message).toMatch(/^maxmemory-policy is "allkeys-lru"/);
  });

  it("InvalidKeyError: the protocol's own check of the resource, before anything is sent", async () => {
    const locker = createLocker({ redis: server.client() });
    // The name of the token format's queue key for "orders": refused, lest the two keys collide.
    const error = await locker.acquire('{orders}:queue', { wait: 0 }).catch((e: unknown) => e);
    await locker.close();
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect(error).toMatchObject({ key: '{orders}:queue' });
    expect((error as Error).message).toMatch(/^invalid lock key "\{orders\}:queue"/);
  });
});
