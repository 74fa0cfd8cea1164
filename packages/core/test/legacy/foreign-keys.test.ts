import { InvalidKeyError, legacyProtocol } from '@lock/core';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { serverSeconds, useRedis } from './fixture.js';

// Keys our side did not write, met where the legacy protocol reads or writes: another lock or
// data at the owner-record key `{name}:owner`, PHP leftovers with a decimal value, and
// timestamps too far ahead for a reply in ms.

const t = useRedis();

/** A Redisson lock named `{x}:owner`: a hash of `<uuid>:<thread>` → holds, with a 30 s lease. */
async function redissonHashAt(key: string): Promise<number> {
  await t.redis.hset(key, 'uuid-1:1', '1');
  await t.redis.pexpire(key, 30_000);
  return Number(await t.redis.call('PEXPIRETIME', key));
}

describe('another lock or data at the owner-record key', () => {
  const legacy = legacyProtocol({ unit: 's', skewMargin: 1_000 });

  it('a foreign hash at {x}:owner: acquire is refused naming the owner record, nothing is written, the hash and its expiry stay as they were', async () => {
    const expiry = await redissonHashAt('{x}:owner');
    const refusal = legacy.acquire(t.redis, 'x', 'a', 3_000);
    await expect(refusal).rejects.toThrow(InvalidKeyError);
    await expect(legacy.acquire(t.redis, 'x', 'a', 3_000)).rejects.toThrow(
      /its owner record \(the name in braces, then ":owner"\) holds another lock or data/,
    );
    await expect(legacy.inspect(t.redis, 'x')).rejects.toThrow(InvalidKeyError);
    expect(await t.redis.keys('*')).toEqual(['{x}:owner']);
    expect(await t.redis.hgetall('{x}:owner')).toEqual({ 'uuid-1:1': '1' });
    expect(Number(await t.redis.call('PEXPIRETIME', '{x}:owner'))).toBe(expiry);
  });

  it('a hash holding our fields and one more is not ours either', async () => {
    await t.redis.hset('{x}:owner', 'owner', 'a', 'holds', '1', 'uuid-1:1', '1');
    await expect(legacy.acquire(t.redis, 'x', 'a', 3_000)).rejects.toThrow(InvalidKeyError);
    expect(await t.redis.keys('*')).toEqual(['{x}:owner']);
  });

  it('a stale TTL-less key is not taken over while a foreign hash sits at {x}:owner', async () => {
    const expiry = await redissonHashAt('{x}:owner');
    const stale = String((await serverSeconds(t.redis)) - 60);
    await t.redis.set('x', stale);
    await expect(legacy.acquire(t.redis, 'x', 'a', 3_000)).rejects.toThrow(InvalidKeyError);
    expect(await t.redis.get('x')).toBe(stale);
    expect(await t.redis.ttl('x')).toBe(-1);
    expect(await t.redis.hgetall('{x}:owner')).toEqual({ 'uuid-1:1': '1' });
    expect(Number(await t.redis.call('PEXPIRETIME', '{x}:owner'))).toBe(expiry);
    expect((await t.redis.keys('*')).sort()).toEqual(['x', '{x}:owner']);
  });

  it('a string at {x}:owner (a PHP lock of that name): InvalidKeyError, not WRONGTYPE, and x is never written', async () => {
    const php = String((await serverSeconds(t.redis)) + 31);
    await t.redis.set('{x}:owner', php, 'EX', 30);
    for (let i = 0; i < 2; i++) {
      await expect(legacy.acquire(t.redis, 'x', 'a', 3_000)).rejects.toThrow(InvalidKeyError);
      expect(await t.redis.exists('x')).toBe(0);
    }
    await expect(legacy.inspect(t.redis, 'x')).rejects.toThrow(InvalidKeyError);
    await t.redis.set('x', String((await serverSeconds(t.redis)) + 30), 'EX', 30);
    await expect(legacy.inspect(t.redis, 'x')).rejects.toThrow(
      /its owner record \(the name in braces, then ":owner"\) holds another lock or data/,
    );
    expect(await t.redis.get('{x}:owner')).toBe(php);
    expect((await t.redis.keys('*')).sort()).toEqual(['x', '{x}:owner']);
  });

  it('for a user the ACL denies HLEN, a hash without our owner and value fields is still refused, and our own record still serves', async () => {
    await t.redis.call('ACL', 'SETUSER', 'nohlen', 'on', '>pw', '~*', '&*', '+@all', '-hlen');
    const user = t.server.client({ username: 'nohlen', password: 'pw' });
    await redissonHashAt('{x}:owner');
    await expect(legacy.acquire(user, 'x', 'a', 3_000)).rejects.toThrow(InvalidKeyError);
    expect(await t.redis.keys('*')).toEqual(['{x}:owner']);
    const first = await legacy.acquire(user, 'y', 'a', 3_000);
    expect(await legacy.acquire(user, 'y', 'a', 3_000)).toMatchObject({ acquired: true, holds: 2 });
    if (!first.acquired) throw new Error('not acquired');
    expect(await legacy.release(user, 'y', 'a', first.token)).toBe('held');
    user.disconnect();
  });

  it('costs a free name one command more, a TYPE of the record key', async () => {
    const before = await commandCalls(t.redis);
    expect(await legacy.acquire(t.redis, 'free', 'a', 3_000)).toMatchObject({ acquired: true });
    const after = await commandCalls(t.redis);
    expect((after.get('type') ?? 0) - (before.get('type') ?? 0)).toBe(2);
    expect(after.get('hlen') ?? 0).toBe(before.get('hlen') ?? 0);
    expect(after.get('hmget') ?? 0).toBe(before.get('hmget') ?? 0);
  });

  it('our own record, left at {x}:owner, is still ours: acquire, re-entry and release go on', async () => {
    const first = await legacy.acquire(t.redis, 'x', 'a', 3_000);
    const again = await legacy.acquire(t.redis, 'x', 'a', 3_000);
    expect(again).toMatchObject({ acquired: true, holds: 2 });
    if (!first.acquired) throw new Error('not acquired');
    expect(await legacy.release(t.redis, 'x', 'a', first.token)).toBe('held');
    expect(await legacy.release(t.redis, 'x', 'a', first.token)).toBe('released');
  });
});

describe('a PHP leftover with a decimal value and no TTL (B10 with expire 2.5)', () => {
  const legacy = legacyProtocol({ unit: 's', skewMargin: 1_000 });

  it('is held until its timestamp is skewMargin past, then taken over, with a TTL', async () => {
    const now = await serverSeconds(t.redis);
    await t.redis.set('fresh:1', `${now + 60}.5`);
    const refused = await legacy.acquire(t.redis, 'fresh:1', 'a', 3_000);
    expect(refused).toMatchObject({ acquired: false });
    if (refused.acquired) throw new Error('taken over');
    // 60.5 s ahead plus the 1 s margin, less what passed of the current second.
    expect(refused.remaining).toBeGreaterThan(60_500);
    expect(refused.remaining).toBeLessThanOrEqual(61_500);
    expect(await legacy.inspect(t.redis, 'fresh:1')).toMatchObject({ held: true, ttl: -1, owner: null });
    expect(await t.redis.get('fresh:1')).toBe(`${now + 60}.5`);

    await t.redis.set('stale:1', `${now - 2}.5`);
    expect(await legacy.inspect(t.redis, 'stale:1')).toMatchObject({ held: false });
    const taken = await legacy.acquire(t.redis, 'stale:1', 'a', 3_000);
    expect(taken).toMatchObject({ acquired: true, holds: 1 });
    expect(await t.redis.get('stale:1')).toMatch(/^\d{10}$/);
    expect(Math.ceil((await t.redis.pttl('stale:1')) / 1000)).toBe(4);
  });
});

describe('a TTL-less timestamp too far ahead for a reply in ms', () => {
  it('answers a remaining wait capped at 2^31 - 1 ms, not an overflowed integer', async () => {
    // In seconds, the furthest value that is not taken for ms (the year 5138).
    for (const [unit, value] of [
      ['s', '9'.repeat(11)],
      ['ms', `1${'0'.repeat(399)}`],
    ] as const) {
      const legacy = legacyProtocol({ unit });
      const key = `far:${unit}:${value.length}`;
      await t.redis.set(key, value);
      expect(await legacy.acquire(t.redis, key, 'a', 3_000)).toEqual({
        acquired: false,
        remaining: 2 ** 31 - 1,
      });
    }
  });
});

/** Calls per command the server has run so far (scripts' commands included). */
async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const stats = await redis.info('commandstats');
  return new Map(
    [...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map(([, name, count]) => [name!, Number(count)]),
  );
}
