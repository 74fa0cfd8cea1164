import { tokenProtocol } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('token protocol: only the owner releases or extends', () => {
  const protocol = tokenProtocol();
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
  });
  afterAll(() => server.stop());

  it('thousands of wrong-owner releases and extends change nothing', async () => {
    const granted = await protocol.acquire(redis, 'owned', 'alice', 60_000);
    expect(granted.acquired).toBe(true);
    const before = await redis.hgetall('{owned}');
    const results = await Promise.all(
      Array.from({ length: 2_000 }, async (_, i) => {
        const intruder = i % 2 === 0 ? `mallory-${i}` : 'alic';
        return [
          await protocol.release(redis, 'owned', intruder, intruder),
          await protocol.extend(redis, 'owned', intruder, intruder, 1),
        ] as const;
      }),
    );
    expect(results.every(([released, extended]) => released === 'not-owner' && extended === null)).toBe(true);
    expect(await redis.hgetall('{owned}')).toEqual(before);
    expect(await redis.pttl('{owned}')).toBeGreaterThan(55_000);
  });

  it("a stale owner's release after someone else acquired leaves the new holder alone", async () => {
    const first = await protocol.acquire(redis, 'stale', 'first', 50);
    expect(first.acquired).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 80));
    const second = await protocol.acquire(redis, 'stale', 'second', 60_000);
    expect(second.acquired).toBe(true);
    expect(await protocol.release(redis, 'stale', 'first', 'first')).toBe('not-owner');
    expect(await protocol.extend(redis, 'stale', 'first', 'first', 60_000)).toBeNull();
    expect(await redis.hgetall('{stale}')).toMatchObject({ second: '1' });
  });

  it('extending a released lock never re-creates the key', async () => {
    await protocol.acquire(redis, 'gone', 'owner', 60_000);
    expect(await protocol.release(redis, 'gone', 'owner', 'owner')).toBe('released');
    expect(await protocol.extend(redis, 'gone', 'owner', 'owner', 60_000)).toBeNull();
    expect(await redis.exists('{gone}')).toBe(0);
  });
});
