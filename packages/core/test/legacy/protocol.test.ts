import { createLocker, InvalidKeyError, InvalidOptionError, legacyProtocol } from '@lock/core';
import { startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { serverSeconds, useRedis } from './fixture.js';

const t = useRedis();

describe('legacy protocol in milliseconds (JedisLock-style fleets)', () => {
  const legacy = legacyProtocol({ unit: 'ms' });

  it('writes a plain string holding now + ttl + peerClockAhead in ms, with a PTTL of ttl, and a fence', async () => {
    const before = Date.now();
    const reply = await legacy.acquire(t.redis, 'lock.foo', 'a', 5_000);
    expect(reply).toMatchObject({ acquired: true, fence: 1, holds: 1 });
    if (!reply.acquired) throw new Error('not acquired');
    expect(await t.redis.type('lock.foo')).toBe('string');
    const value = await t.redis.get('lock.foo');
    expect(value).toBe(reply.token);
    expect(value).toMatch(/^\d{13}$/);
    // Loopback server and test share one host clock: allow a generous second either side.
    // The default peerClockAhead pads it by 2 s.
    expect(Number(value)).toBeGreaterThanOrEqual(before + 7_000 - 1_000);
    expect(Number(value)).toBeLessThanOrEqual(Date.now() + 7_000 + 1_000);
    const pttl = await t.redis.pttl('lock.foo');
    expect(pttl).toBeGreaterThan(4_000);
    expect(pttl).toBeLessThanOrEqual(5_000);
  });

  it('refuses a held lock with its remaining PTTL and hands out strictly increasing fences', async () => {
    const first = await legacy.acquire(t.redis, 'k', 'a', 5_000);
    const refused = await legacy.acquire(t.redis, 'k', 'b', 5_000);
    expect(refused.acquired).toBe(false);
    if (refused.acquired || !first.acquired) throw new Error('unexpected');
    expect(refused.remaining).toBeGreaterThan(4_000);
    await legacy.release(t.redis, 'k', 'a', first.token);
    const second = await legacy.acquire(t.redis, 'k', 'b', 5_000);
    if (!second.acquired) throw new Error('not acquired');
    expect(second.fence).toBeGreaterThan(first.fence);
  });

  it('releases only its own hold and publishes the release', async () => {
    const listener = t.server.client();
    const messages: string[] = [];
    await listener.subscribe(legacy.channel('k', 'w'));
    listener.on('message', (_channel, message) => messages.push(message));
    const held = await legacy.acquire(t.redis, 'k', 'a', 5_000);
    if (!held.acquired) throw new Error('not acquired');
    expect(await legacy.release(t.redis, 'k', 'b', held.token)).toBe('not-owner');
    expect(await t.redis.get('k')).toBe(held.token);
    expect(await legacy.release(t.redis, 'k', 'a', held.token)).toBe('released');
    expect(await t.redis.exists('k')).toBe(0);
    expect(await legacy.release(t.redis, 'k', 'a', held.token)).toBe('not-owner');
    await expect.poll(() => messages).toEqual(['released']);
    expect(legacy.isReleaseMessage?.('released')).toBe(true);
    listener.disconnect();
  });

  it('extends by rewriting value and TTL, answers the new token, and never re-creates a key', async () => {
    const held = await legacy.acquire(t.redis, 'k', 'a', 1_000);
    if (!held.acquired) throw new Error('not acquired');
    const token = await legacy.extend(t.redis, 'k', 'a', held.token, 60_000);
    expect(token).not.toBeNull();
    expect(token).not.toBe(held.token);
    expect(await t.redis.get('k')).toBe(token);
    expect(await t.redis.pttl('k')).toBeGreaterThan(59_000);
    expect(Number(token) - Number(held.token)).toBeGreaterThanOrEqual(59_000);
    await t.redis.del('k');
    expect(await legacy.extend(t.redis, 'k', 'a', token!, 60_000)).toBeNull();
    expect(await t.redis.exists('k')).toBe(0);
  });

  it('renews many locks at once, each only for its own owner', async () => {
    const a = await legacy.acquire(t.redis, 'a', 'o', 1_000);
    const b = await legacy.acquire(t.redis, 'b', 'o', 1_000);
    if (!a.acquired || !b.acquired) throw new Error('not acquired');
    const renewed = await legacy.extendMany!(
      t.redis,
      [
        { resource: 'a', owner: 'o', token: a.token },
        { resource: 'b', owner: 'p', token: b.token },
      ],
      30_000,
    );
    expect(renewed[0]).toBe(await t.redis.get('a'));
    expect(renewed[1]).toBeNull();
    expect(await t.redis.pttl('a')).toBeGreaterThan(29_000);
    expect(await t.redis.pttl('b')).toBeLessThanOrEqual(1_000);
  });

  it('inspects without changing anything', async () => {
    expect(await legacy.inspect(t.redis, 'k')).toEqual({
      held: false,
      ttl: null,
      owner: null,
      fence: null,
      holds: 0,
    });
    const held = await legacy.acquire(t.redis, 'k', 'a', 5_000);
    if (!held.acquired) throw new Error('not acquired');
    const seen = await legacy.inspect(t.redis, 'k');
    expect(seen).toMatchObject({ held: true, owner: 'a', fence: held.fence, holds: 1 });
    expect(seen.ttl).toBeGreaterThan(4_000);
    expect(await t.redis.get('k')).toBe(held.token);
  });

  it('re-enters for the same owner only, counting holds beside the key, and frees on the last release', async () => {
    const first = await legacy.acquire(t.redis, 'k', 'a', 5_000);
    if (!first.acquired) throw new Error('not acquired');
    expect((await legacy.acquire(t.redis, 'k', 'b', 5_000)).acquired).toBe(false);
    const again = await legacy.acquire(t.redis, 'k', 'a', 1_000);
    expect(again).toMatchObject({ acquired: true, fence: first.fence, holds: 2, token: first.token });
    expect(await legacy.inspect(t.redis, 'k')).toMatchObject({ held: true, owner: 'a', holds: 2 });
    expect(await legacy.release(t.redis, 'k', 'a', first.token)).toBe('held');
    expect(await t.redis.get('k')).toBe(first.token);
    expect(await legacy.release(t.redis, 'k', 'a', first.token)).toBe('released');
    expect((await t.redis.keys('*')).sort()).toEqual(['{#}:fences', '{#}:fences:epoch']);
  });

  it('a re-entry asking for a longer lease rewrites value and TTL together', async () => {
    const first = await legacy.acquire(t.redis, 'k', 'a', 1_000);
    const again = await legacy.acquire(t.redis, 'k', 'a', 60_000);
    if (!first.acquired || !again.acquired) throw new Error('not acquired');
    expect(again.holds).toBe(2);
    expect(Number(again.token)).toBeGreaterThan(Number(first.token));
    expect(await t.redis.get('k')).toBe(again.token);
    expect(await t.redis.pttl('k')).toBeGreaterThan(59_000);
    expect(await t.redis.pttl('{k}:owner')).toBeGreaterThan(59_000);
  });

  it('does not count a re-entry once a legacy fleet has rewritten the value', async () => {
    const first = await legacy.acquire(t.redis, 'k', 'a', 5_000);
    if (!first.acquired) throw new Error('not acquired');
    await t.redis.set('k', String(Number(first.token) + 7), 'KEEPTTL');
    expect((await legacy.acquire(t.redis, 'k', 'a', 5_000)).acquired).toBe(false);
    expect(await legacy.inspect(t.redis, 'k')).toMatchObject({ held: true, owner: null, holds: 1 });
  });

  it('reports a TTL-less key as held until it is stale past the skew margin', async () => {
    await t.redis.set('fresh', String(Date.now() + 60_000));
    expect(await legacy.inspect(t.redis, 'fresh')).toMatchObject({ held: true, ttl: -1 });
    await t.redis.set('stale', String(Date.now() - 60_000));
    expect(await legacy.inspect(t.redis, 'stale')).toMatchObject({ held: false, ttl: null });
  });

  it('surfaces another Redis type under the name as InvalidKeyError, before writing anything', async () => {
    await t.redis.hset('k', 'owner', '1');
    await expect(legacy.acquire(t.redis, 'k', 'a', 1_000)).rejects.toThrow(InvalidKeyError);
    await expect(legacy.acquire(t.redis, 'k', 'a', 1_000)).rejects.toThrow(/another Redis type/);
    await expect(legacy.inspect(t.redis, 'k')).rejects.toThrow(InvalidKeyError);
    expect(await legacy.release(t.redis, 'k', 'a', '1')).toBe('not-owner');
    expect(await legacy.extend(t.redis, 'k', 'a', '1', 1_000)).toBeNull();
    expect(await t.redis.hgetall('k')).toEqual({ owner: '1' });
    expect(await t.redis.keys('*')).toEqual(['k']);
  });

  it('refuses a string that is not a decimal timestamp', async () => {
    await t.redis.set('k', 'hello', 'EX', 60);
    await expect(legacy.acquire(t.redis, 'k', 'a', 1_000)).rejects.toThrow(/not a decimal timestamp/);
    expect(await t.redis.get('k')).toBe('hello');
  });
});

describe('legacy protocol in seconds (the PHP fleet)', () => {
  const legacy = legacyProtocol({ unit: 's' });

  it('writes integer seconds now + expire + 1 + peerClockAhead (2 s by default) with a TTL of expire + 1', async () => {
    const reply = await legacy.acquire(t.redis, 'lock_goods:300', 'a', 3_000);
    if (!reply.acquired) throw new Error('not acquired');
    const now = await serverSeconds(t.redis);
    expect(reply.token).toMatch(/^\d{10}$/);
    // The server's second may tick between the script and our TIME call.
    expect([now + 6, now + 5]).toContain(Number(reply.token));
    expect(Math.ceil((await t.redis.pttl('lock_goods:300')) / 1000)).toBe(4);
  });

  it('with peerClockAhead: 0 writes exactly what the PHP class writes, now + expire + 1', async () => {
    const exact = legacyProtocol({ unit: 's', peerClockAhead: 0 });
    const reply = await exact.acquire(t.redis, 'lock_goods:300', 'a', 3_000);
    if (!reply.acquired) throw new Error('not acquired');
    const now = await serverSeconds(t.redis);
    expect([now + 4, now + 3]).toContain(Number(reply.token));
    expect(Math.ceil((await t.redis.pttl('lock_goods:300')) / 1000)).toBe(4);
  });

  it('refuses a ttl that is not whole seconds, before any write', async () => {
    for (const ttl of [0, -1_000, 1_500, 999, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31 * 1_000]) {
      await expect(legacy.acquire(t.redis, 'k', 'a', ttl)).rejects.toThrow(InvalidOptionError);
    }
    await expect(legacy.acquire(t.redis, 'k', 'a', 2_500)).rejects.toThrow(/"ttl": 2500/);
    expect(await t.redis.dbsize()).toBe(0);
  });
});

describe('legacy owner record', () => {
  it('expires at the very ms its lock key does, however the script was timed between the two writes', async () => {
    const legacy = legacyProtocol();
    const apart: string[] = [];
    // A ms boundary falls between a script's two relative expiries now and then: 2 000 acquisitions meet several.
    for (let i = 0; i < 2_000; i++) {
      const key = `expiry:${i}`;
      const reply = await legacy.acquire(t.redis, key, 'a', 5_000);
      expect(reply.acquired).toBe(true);
      const [lock, record] = await Promise.all([
        t.redis.call('PEXPIRETIME', key),
        t.redis.call('PEXPIRETIME', `{${key}}:owner`),
      ]);
      if (lock !== record) apart.push(`${key}: ${lock} / ${record}`);
    }
    expect(apart).toEqual([]);
  });

  it('expires the record at the very ms its lock key does on a server without PEXPIRETIME (before Redis 7) too', async () => {
    // Hidden from the scripts under another name, which only this test calls to read the expiries.
    await using server = await startRedis({ config: { 'rename-command': 'PEXPIRETIME hidden-pexpiretime' } });
    const redis = server.client();
    const legacy = legacyProtocol();
    await expect(redis.call('PEXPIRETIME', 'any')).rejects.toThrow(/unknown command/);
    const apart: string[] = [];
    for (let i = 0; i < 2_000; i++) {
      const key = `expiry:${i}`;
      expect((await legacy.acquire(redis, key, 'a', 5_000)).acquired).toBe(true);
      const [lock, record] = await Promise.all([
        redis.call('hidden-pexpiretime', key),
        redis.call('hidden-pexpiretime', `{${key}}:owner`),
      ]);
      if (lock !== record) apart.push(`${key}: ${lock} / ${record}`);
    }
    expect(apart).toEqual([]);
  });

  it('falls back to relative TTLs on a server without PEXPIRETIME (before Redis 7): acquire, re-enter, extend and release still work', async () => {
    await using server = await startRedis({ config: { 'rename-command': 'PEXPIRETIME ""' } });
    const redis = server.client();
    const legacy = legacyProtocol();
    const first = await legacy.acquire(redis, 'six', 'a', 5_000);
    expect(first).toMatchObject({ acquired: true, holds: 1 });
    expect(await legacy.acquire(redis, 'six', 'a', 5_000)).toMatchObject({ acquired: true, holds: 2 });
    const token = await redis.get('six');
    expect(await redis.pttl('{six}:owner')).toBeGreaterThan(4_000);
    const extended = await legacy.extend(redis, 'six', 'a', token!, 8_000);
    expect(extended).not.toBeNull();
    expect(await redis.pttl('{six}:owner')).toBeGreaterThan(7_000);
    expect(await legacy.release(redis, 'six', 'a', extended!)).toBe('held');
    expect(await legacy.release(redis, 'six', 'a', extended!)).toBe('released');
    expect(await redis.exists('six', '{six}:owner')).toBe(0);
  });
});

describe('legacy protocol inputs', () => {
  it('refuses bad options and ttls naming the value, before any write', async () => {
    expect(() => legacyProtocol({ unit: 'us' as never })).toThrow(/"unit": "us"/);
    expect(() => legacyProtocol({ skewMargin: -1 })).toThrow(/"skewMargin": -1/);
    expect(() => legacyProtocol({ skewMargin: 0.5 })).toThrow(InvalidOptionError);
    // null is a value, not "left out": it never silently takes the default.
    for (const option of ['unit', 'skewMargin', 'peerClockAhead']) {
      expect(() => legacyProtocol({ [option]: null } as never)).toThrow(`"${option}": null`);
    }
    const legacy = legacyProtocol();
    for (const ttl of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      await expect(legacy.acquire(t.redis, 'k', 'a', ttl)).rejects.toThrow(InvalidOptionError);
      await expect(legacy.extend(t.redis, 'k', 'a', '1', ttl)).rejects.toThrow(InvalidOptionError);
    }
    expect(await t.redis.dbsize()).toBe(0);
  });

  it('refuses misspelt options and a missing options object by name', () => {
    expect(() => legacyProtocol({ unti: 's' } as never)).toThrow(
      /unknown option "unti" \(expected one of the legacy protocol options: unit, skewMargin, peerClockAhead\)\. Did you mean "unit"\?/,
    );
    expect(() => legacyProtocol(null as never)).toThrow(/"options": null/);
  });

  it("checks a locker's ttl in seconds before its first command, as its own acquire script would", async () => {
    const protocol = legacyProtocol({ unit: 's' });
    expect(() => createLocker({ redis: t.redis, protocol, ttl: 1_500 })).toThrow(/"ttl": 1500/);
    // A counter already there: a new locker's first acquisition would stamp it before its script.
    const warm = createLocker({ redis: t.redis, protocol, ttl: 2_000 });
    await (await warm.acquire('{seconds}:1')).release();
    await warm.close();
    const locker = createLocker({ redis: t.redis, protocol, ttl: 2_000 });
    const before = await commandsRun(t.redis);
    await expect(locker.acquire('{seconds}:2', { ttl: 1_500 })).rejects.toThrow(/"ttl": 1500/);
    await expect(locker.tryAcquire('{seconds}:2', { ttl: 999 })).rejects.toThrow(InvalidOptionError);
    expect(await commandsRun(t.redis)).toBe(before);
    const lock = await locker.acquire('{seconds}:2');
    await expect(lock.extend(2_500)).rejects.toThrow(/"ttl": 2500/);
    expect(Math.ceil((await t.redis.pttl('lock:{seconds}:2')) / 1000)).toBe(3);
    await lock.release();
    await locker.close();
  });

  it('requires a {hash tag} on a cluster, where lock and fence must share a slot', () => {
    const legacy = legacyProtocol();
    expect(() => legacy.validate('lock_goods:300', true)).toThrow(InvalidKeyError);
    expect(() => legacy.validate('lock_goods:300', true)).toThrow(/\{hash tag\}/);
    expect(() => legacy.validate('{lock_goods}:300', true)).not.toThrow();
    expect(() => legacy.validate('lock_goods:300', false)).not.toThrow();
    expect(() => legacy.validate('', false)).toThrow(InvalidKeyError);
  });

  it('draws its fence from a TTL-less counter shared by the namespace, kept apart from the lock key', async () => {
    const legacy = legacyProtocol();
    const held = await legacy.acquire(t.redis, 'lock.foo', 'a', 5_000);
    if (!held.acquired) throw new Error('not acquired');
    expect((await t.redis.keys('*')).sort()).toEqual([
      'lock.foo',
      '{#}:fences',
      '{#}:fences:epoch',
      '{lock.foo}:owner',
    ]);
    expect(await t.redis.get('{#}:fences')).toBe(String(held.fence));
    expect(await t.redis.ttl('{#}:fences')).toBe(-1);
    expect(await t.redis.hget('{lock.foo}:owner', 'fence')).toBe(String(held.fence));
    // Another namespace ('tag:') has a counter of its own; a key always stays in one namespace.
    const tagged = await legacy.acquire(t.redis, '{tag}:x', 'a', 5_000);
    if (!tagged.acquired) throw new Error('not acquired');
    expect(await t.redis.get('{tag:#}:fences')).toBe(String(tagged.fence));
  });
});

/** Commands the server has run, INFO's own calls left out. */
async function commandsRun(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  let calls = 0;
  for (const [, name, count] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name !== 'info') calls += Number(count);
  }
  return calls;
}
