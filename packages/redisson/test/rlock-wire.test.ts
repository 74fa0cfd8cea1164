import { randomUUID } from 'node:crypto';
import { LuaScript } from '@lock/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import attemptLua from '../src/attempt.lua';
import deadWaitersLua from '../src/fair/dead-waiters.lua';
import turnLua from '../src/fair/turn.lua';
import { FencedLockProtocol } from '../src/fenced/protocol.js';
import { RLockProtocol } from '../src/lock/protocol.js';
import releaseLua from '../src/lock/release.lua';
import { dump, recordScriptCommands } from './helpers/observe.js';
import { useRedis } from './helpers/server.js';

const name = 'orders:42';
const channel = 'redisson_lock__channel:{orders:42}';
const latchPattern = /^redisson_unlock_latch:\{orders:42\}:[0-9a-f]{32}$/;
/** Redisson's RFencedLock counter: the one key this package writes that Java's RLock does not. */
const token = 'redisson_lock_token:{orders:42}';
const counterAt = (value: number) => ({ [token]: { type: 'string', pttl: -1, value: String(value) } });

describe('RLock wire format (protocols/redisson.md §1 and Appendix A)', () => {
  const context = useRedis();
  let redis: Redis;
  let published: typeof context.published;
  let scripts: Awaited<ReturnType<typeof recordScriptCommands>>;
  const protocol = new RLockProtocol();
  const us = `${randomUUID()}:1`;

  beforeAll(async () => {
    scripts = await recordScriptCommands(context.server.client());
  });
  afterAll(() => scripts.stop());
  beforeEach(async () => {
    ({ redis, published } = context);
    await scripts.take();
  });

  it('acquire writes one hash field "<uuid>:<thread>" = "1" with the full lease, and re-entry counts up', async () => {
    expect(us).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:1$/);
    const first = await protocol.acquire(redis, name, us, 30_000);
    expect(first).toMatchObject({ acquired: true, holds: 1, token: '30000', fence: 1 });
    let keys = await dump(redis);
    expect(Object.keys(keys)).toEqual([name, token]);
    expect(keys[token]).toEqual(counterAt(1)[token]);
    expect(keys[name]).toMatchObject({ type: 'hash', value: { [us]: '1' } });
    expect(keys[name]!.pttl).toBeGreaterThan(29_000);
    expect(keys[name]!.pttl).toBeLessThanOrEqual(30_000);

    await redis.pexpire(name, 5_000);
    // A re-entry reads its hold's fence back without drawing a new one.
    const again = await new RLockProtocol().acquire(redis, name, us, 30_000);
    expect(again).toMatchObject({ acquired: true, holds: 2, fence: 1 });
    keys = await dump(redis);
    expect(keys[name]!.value).toEqual({ [us]: '2' });
    expect(keys[token]!.value).toBe('1');
    expect(keys[name]!.pttl).toBeGreaterThan(29_000); // re-entry resets the lease
  });

  it("an attempt the engine names leaves its latch in its owner's list (its fence, PX the lock TTL); a copy of it counts no hold", async () => {
    const attempt = (id: string) => ({ wait: 0, attempt: id });
    const latches = `redisson_lock_attempt:{orders:42}:${us}`;
    expect(await protocol.acquire(redis, name, us, 30_000, attempt('t1'))).toMatchObject({
      holds: 1,
      fence: 1,
    });
    const keys = await dump(redis);
    expect(Object.keys(keys)).toEqual([name, latches, token]);
    expect(keys[latches]).toMatchObject({ type: 'list', value: ['1:t1'] });
    expect(keys[latches]!.pttl).toBeGreaterThan(29_000);
    expect(keys[latches]!.pttl).toBeLessThanOrEqual(30_000);
    // ioredis resending the attempt after its reply was lost: answered as the hold stands.
    expect(await protocol.acquire(redis, name, us, 30_000, attempt('t1'))).toMatchObject({
      holds: 1,
      fence: 1,
    });
    expect(await redis.hget(name, us)).toBe('1');
    // A re-entry's latch lives as long as the lock it leaves, not as its own shorter lease.
    expect(await protocol.acquire(redis, name, us, 1_000, attempt('t2'))).toMatchObject({
      holds: 2,
      fence: 1,
    });
    expect(await redis.lrange(latches, 0, -1)).toEqual(['1:t2', '1:t1']);
    expect(await redis.pttl(latches)).toBeGreaterThan(29_000);
    expect(await protocol.acquire(redis, name, us, 1_000, attempt('t2'))).toMatchObject({
      holds: 2,
      fence: 1,
    });
    expect(await redis.hget(name, us)).toBe('2');
    // No more latches than holds: only the newest attempts can still be resent.
    expect(await protocol.release(redis, name, us, '30000')).toBe('held');
    await protocol.acquire(redis, name, us, 30_000, attempt('t3'));
    expect(await redis.lrange(latches, 0, -1)).toEqual(['1:t3', '1:t2']);
    // The last unlock takes the list with the hash: it protects no hold any more.
    await protocol.release(redis, name, us, '30000');
    expect(await protocol.release(redis, name, us, '30000')).toBe('released');
    expect(await redis.exists(latches)).toBe(0);
    // Once the hold is gone, a late copy takes the lock afresh, as its first sending would have.
    expect(await protocol.acquire(redis, name, us, 30_000, attempt('t1'))).toMatchObject({
      holds: 1,
      fence: 2,
    });
    expect(await redis.lrange(latches, 0, -1)).toEqual(['2:t1']);
    // forceUnlock takes every holder's list with the hash.
    await protocol.forceUnlock(redis, name);
    expect(await redis.exists(latches)).toBe(0);
    // A fenced copy answers the token its attempt drew, and draws none.
    const fenced = new FencedLockProtocol();
    expect(await fenced.acquire(redis, name, us, 30_000, attempt('f1'))).toMatchObject({
      holds: 1,
      fence: 3,
    });
    expect(await fenced.acquire(redis, name, us, 30_000, attempt('f2'))).toMatchObject({
      holds: 2,
      fence: 4,
    });
    expect(await fenced.acquire(redis, name, us, 30_000, attempt('f1'))).toMatchObject({
      holds: 2,
      fence: 3,
    });
    expect(await redis.get(token)).toBe('4');
  });

  it('a re-entry with a shorter lease keeps the longer TTL and answers it; a partial unlock never shortens it', async () => {
    expect(await protocol.acquire(redis, name, us, 30_000)).not.toHaveProperty('ttl');
    const again = await protocol.acquire(redis, name, us, 1_000);
    expect(again).toMatchObject({ acquired: true, holds: 2, fence: 1, token: '1000' });
    expect(again.acquired && again.ttl).toBeGreaterThan(29_000);
    expect(await redis.pttl(name)).toBeGreaterThan(29_000);
    expect(await protocol.release(redis, name, us, '1000')).toBe('held');
    expect(await redis.pttl(name)).toBeGreaterThan(29_000);
  });

  it('a contender is refused with the holder PTTL and nothing changes', async () => {
    await protocol.acquire(redis, name, us, 30_000);
    const before = await dump(redis);
    const reply = await protocol.acquire(redis, name, `${randomUUID()}:1`, 30_000);
    expect(reply.acquired).toBe(false);
    if (!reply.acquired) {
      expect(reply.remaining).toBeGreaterThan(29_000);
      expect(reply.remaining).toBeLessThanOrEqual(30_000);
    }
    expect((await dump(redis))[name]!.value).toEqual(before[name]!.value);
  });

  it('unlock by a non-owner answers not-owner, publishes nothing and leaves no latch', async () => {
    await protocol.acquire(redis, name, us, 30_000);
    expect(await protocol.release(redis, name, `${randomUUID()}:1`, '30000')).toBe('not-owner');
    expect(Object.keys(await dump(redis))).toEqual([name, token]);
    expect(await published.take()).toEqual([]);
  });

  it('a partial unlock decrements, resets the lease, writes latch "0" with a 16-20 s PX, then deletes it', async () => {
    await protocol.acquire(redis, name, us, 30_000);
    await protocol.acquire(redis, name, us, 30_000);
    await redis.pexpire(name, 5_000);
    await scripts.take();
    expect(await protocol.release(redis, name, us, '30000')).toBe('held');
    const keys = await dump(redis);
    expect(Object.keys(keys)).toEqual([name, token]);
    expect(keys[name]!.value).toEqual({ [us]: '1' });
    expect(keys[name]!.pttl).toBeGreaterThan(29_000);
    const set = (await scripts.take()).find(([command]) => command === 'set');
    expect(set?.[1]).toMatch(latchPattern);
    expect(set?.slice(2, 4)).toEqual(['0', 'px']);
    expect(Number(set?.[4])).toBeGreaterThanOrEqual(16_000);
    expect(Number(set?.[4])).toBeLessThanOrEqual(20_000);
    expect(await published.take()).toEqual([]);
  });

  it('the last unlock deletes the hash and publishes "0" on redisson_lock__channel:{name}', async () => {
    await protocol.acquire(redis, name, us, 30_000);
    await scripts.take();
    expect(await protocol.release(redis, name, us, '30000')).toBe('released');
    expect(await dump(redis)).toEqual(counterAt(1));
    expect(await published.take()).toEqual([{ channel, message: '0' }]);
    const commands = await scripts.take();
    expect(commands).toContainEqual(['publish', channel, '0']);
    expect(commands.find(([command]) => command === 'set')?.slice(2, 4)).toEqual(['1', 'px']);
  });

  it('a retried unlock with the same request id answers from the latch and does not decrement twice', async () => {
    const release = new LuaScript(attemptLua + deadWaitersLua + turnLua + releaseLua);
    await protocol.acquire(redis, name, us, 30_000);
    await protocol.acquire(redis, name, us, 30_000);
    const latch = 'redisson_unlock_latch:{orders:42}:0123456789abcdef0123456789abcdef';
    const latches = `redisson_lock_attempt:{orders:42}:${us}`;
    const call = () =>
      release.run(redis, [name, channel, latches, latch], ['0', 30_000, us, 'publish', 17_000]);
    expect(await call()).toBe(0);
    expect(await redis.get(latch)).toBe('0');
    expect(await call()).toBe(0); // Redisson's retry after a lost reply presents the same latch
    expect(await redis.hget(name, us)).toBe('1');
    const pttl = await redis.pttl(latch);
    expect(pttl).toBeGreaterThan(16_000);
    expect(pttl).toBeLessThanOrEqual(17_000);
  });

  it('renewal resets the lease only while the field exists and never re-creates the key', async () => {
    await protocol.acquire(redis, name, us, 30_000);
    await redis.pexpire(name, 5_000);
    const items = [
      { resource: name, owner: us, token: '30000' },
      { resource: 'other:lock', owner: us, token: '30000' },
    ];
    expect(await protocol.extendMany(redis, items, 30_000)).toEqual(['30000', null]);
    expect(await redis.pttl(name)).toBeGreaterThan(29_000);
    await protocol.release(redis, name, us, '30000');
    expect(await protocol.extend(redis, name, us, '30000', 30_000)).toBeNull();
    expect(await dump(redis)).toEqual(counterAt(1));
  });

  it('an explicit lease is the PEXPIRE', async () => {
    await protocol.acquire(redis, name, us, 10_000);
    const pttl = await redis.pttl(name);
    expect(pttl).toBeGreaterThan(9_000);
    expect(pttl).toBeLessThanOrEqual(10_000);
  });

  it('forceUnlock deletes whoever holds it and publishes "0"; again it answers false', async () => {
    await protocol.acquire(redis, name, `${randomUUID()}:77`, 10_000);
    expect(await protocol.forceUnlock(redis, name)).toBe(true);
    expect(await dump(redis)).toEqual(counterAt(1));
    expect(await published.take()).toEqual([{ channel, message: '0' }]);
    expect(await protocol.forceUnlock(redis, name)).toBe(false);
    expect(await published.take()).toEqual([]);
  });

  it('inspect reports holder, count, TTL and the fence, the same to any client', async () => {
    expect(await protocol.inspect(redis, name)).toEqual({
      held: false,
      ttl: null,
      owner: null,
      fence: null,
      holds: 0,
    });
    await protocol.acquire(redis, name, us, 30_000);
    await protocol.acquire(redis, name, us, 30_000);
    const seen = await protocol.inspect(redis, name);
    expect(seen).toMatchObject({ held: true, owner: us, holds: 2, fence: 1 });
    expect(seen.ttl).toBeGreaterThan(29_000);
    // Another client (another protocol object) sees the same holder and fence.
    expect(await new RLockProtocol().inspect(redis, name)).toMatchObject({ owner: us, holds: 2, fence: 1 });
    await protocol.release(redis, name, us, '30000');
    await protocol.release(redis, name, us, '30000');
    expect(await protocol.inspect(redis, name)).toEqual({
      held: false,
      ttl: null,
      owner: null,
      fence: 1,
      holds: 0,
    });
  });

  it('fenced lock: every acquisition, re-entry included, INCRs redisson_lock_token:{name}, which has no TTL', async () => {
    const fenced = new FencedLockProtocol();
    const token = 'redisson_lock_token:{orders:42}';
    expect(await fenced.acquire(redis, name, us, 30_000)).toMatchObject({
      acquired: true,
      holds: 1,
      fence: 1,
    });
    expect((await fenced.acquire(redis, name, `${randomUUID()}:1`, 30_000)).acquired).toBe(false);
    expect(await fenced.acquire(redis, name, us, 30_000)).toMatchObject({
      acquired: true,
      holds: 2,
      fence: 2,
    });
    const keys = await dump(redis);
    expect(keys[name]).toMatchObject({ type: 'hash', value: { [us]: '2' } });
    expect(keys[token]).toEqual({ type: 'string', pttl: -1, value: '2' });
    await fenced.release(redis, name, us, '30000');
    expect(await fenced.release(redis, name, us, '30000')).toBe('released');
    expect(await dump(redis)).toEqual({ [token]: { type: 'string', pttl: -1, value: '2' } });
    expect(await fenced.inspect(redis, name)).toMatchObject({ held: false, fence: 2 });
  });
});
