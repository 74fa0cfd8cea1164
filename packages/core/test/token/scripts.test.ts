import { createLocker, InvalidKeyError, tokenProtocol } from '@lock/core';
import { startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';

describe('token protocol scripts', () => {
  it('increments the fence before writing the lock: a broken counter leaves no lock behind', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const locker = createLocker({ redis });
    await redis.set('{lock:#}:fences', 'not a number');
    const error = await locker.acquire('broken', { wait: 0 }).catch((e: unknown) => e);
    expect((error as Error).message).toContain('not an integer');
    expect(await redis.exists('{lock:broken}')).toBe(0);
    await locker.close();
  });

  it('refuses a tagged name that is another lock’s fence, owner record or channel, before writing', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const locker = createLocker({ redis, prefix: '' });
    const lock = await locker.acquire('{a}', { ttl: 5_000 });
    for (const name of ['{a}:fence', '{a}:fences', '{#}:fences:epoch', '{a}:owner', '{a}:released']) {
      const error = await locker.acquire(name, { wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidKeyError);
      expect((error as Error).message).toContain(name);
    }
    expect(await redis.hget('{a}', '')).toBe(String(lock.fence));
    expect(await redis.exists('{a}:fence', '{a}:owner')).toBe(0);
    await lock.release();
    await locker.close();
  });

  it('answers a resent first attempt of a fresh owner as the same single hold', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const protocol = tokenProtocol();
    const fresh = { wait: 0, fresh: true };
    const first = await protocol.acquire(redis, 'resent', 'owner-1', 5_000, fresh);
    const again = await protocol.acquire(redis, 'resent', 'owner-1', 5_000, fresh);
    expect(first).toMatchObject({ acquired: true, holds: 1 });
    expect(again).toMatchObject({ acquired: true, holds: 1 });
    expect(again.acquired && first.acquired && again.fence === first.fence).toBe(true);
    expect(await protocol.release(redis, 'resent', 'owner-1', 'owner-1')).toBe('released');
    // Without `fresh` the same call is a re-entry and counts.
    await protocol.acquire(redis, 'counted', 'owner-2', 5_000, { wait: 0 });
    expect(await protocol.acquire(redis, 'counted', 'owner-2', 5_000, { wait: 0 })).toMatchObject({
      holds: 2,
    });
  });
});
