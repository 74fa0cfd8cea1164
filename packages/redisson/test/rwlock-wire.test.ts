import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { ReadLockProtocol, WriteLockProtocol } from '../src/rwlock/protocol.js';
import { dump, recordScriptCommands } from './helpers/observe.js';
import { useRedis } from './helpers/server.js';

const name = 'orders:42';
const channel = 'redisson_rwlock:{orders:42}';
const timeoutKey = (owner: string, n: number) => `{orders:42}:${owner}:rwlock_timeout:${n}`;
/** A reader's fence, kept for its re-entries: a key Redisson never reads. */
const fenceKey = (owner: string) => `{orders:42}:${owner}:rwlock_fence`;
/** The fence counter the RLock of the same name uses (never expires). */
const counter = 'redisson_lock_token:{orders:42}';
const counterAt = (value: number) => ({ [counter]: { type: 'string', pttl: -1, value: String(value) } });

describe('read-write lock wire format (protocols/redisson.md §3 and Appendix A §3)', () => {
  const context = useRedis();
  let redis: Redis;
  let published: typeof context.published;
  const read = new ReadLockProtocol();
  const write = new WriteLockProtocol();
  const a = `${randomUUID()}:1`;
  const b = `${randomUUID()}:7`;
  const c = `${randomUUID()}:3`;

  beforeEach(() => {
    ({ redis, published } = context);
  });

  it('readers share the hash (mode "read") with one timeout key per read hold; a writer is refused', async () => {
    expect(await read.acquire(redis, name, a, 30_000)).toMatchObject({ acquired: true, holds: 1, fence: 1 });
    expect(await read.acquire(redis, name, b, 30_000)).toMatchObject({ acquired: true, holds: 1, fence: 2 });
    // A re-entry keeps its hold's fence, though another reader drew since.
    expect(await read.acquire(redis, name, a, 30_000)).toMatchObject({ acquired: true, holds: 2, fence: 1 });
    const keys = await dump(redis);
    expect(Object.keys(keys)).toEqual(
      [name, timeoutKey(a, 1), timeoutKey(a, 2), timeoutKey(b, 1), fenceKey(a), fenceKey(b), counter].sort(),
    );
    expect(keys[fenceKey(a)]).toMatchObject({ type: 'string', value: '1' });
    expect(keys[counter]).toEqual(counterAt(2)[counter]);
    expect(keys[name]).toMatchObject({ type: 'hash', value: { mode: 'read', [a]: '2', [b]: '1' } });
    for (const key of [name, timeoutKey(a, 1), timeoutKey(a, 2), timeoutKey(b, 1)]) {
      expect(keys[key]!.pttl).toBeGreaterThan(29_000);
      expect(keys[key]!.pttl).toBeLessThanOrEqual(30_000);
    }
    expect(keys[timeoutKey(b, 1)]).toMatchObject({ type: 'string', value: '1' });
    const refused = await write.acquire(redis, name, c, 30_000);
    expect(refused.acquired).toBe(false);

    // Renewal of A: its timeout keys and the hash, not B's key.
    await redis.pexpire(name, 3_000);
    await redis.pexpire(timeoutKey(b, 1), 3_000);
    expect(await read.extend(redis, name, a, '30000', 30_000)).toBe('30000');
    expect(await redis.pttl(name)).toBeGreaterThan(29_000);
    expect(await redis.pttl(timeoutKey(b, 1))).toBeLessThanOrEqual(3_000);

    // A leaves twice: the hash then lives as long as B's timeout key; the last reader deletes it and publishes "0".
    expect(await read.release(redis, name, a, '30000')).toBe('held');
    expect(await read.release(redis, name, a, '30000')).toBe('held');
    const left = await dump(redis);
    expect(Object.keys(left)).toEqual([name, timeoutKey(b, 1), fenceKey(b), counter].sort());
    expect(left[name]!.value).toEqual({ mode: 'read', [b]: '1' });
    expect(left[name]!.pttl).toBeLessThanOrEqual(3_000);
    expect(await published.take()).toEqual([]);
    expect(await read.release(redis, name, b, '30000')).toBe('released');
    expect(await dump(redis)).toEqual(counterAt(2));
    expect(await published.take()).toEqual([{ channel, message: '0' }]);
  });

  it("a reader's renewal never shortens the hash below another reader's longer fixed lease", async () => {
    await read.acquire(redis, name, b, 60_000);
    await read.acquire(redis, name, a, 30_000);
    expect(await read.extend(redis, name, a, '30000', 30_000)).toBe('30000');
    expect(await redis.pttl(name)).toBeGreaterThan(59_000);
    // A's partial leave recomputes the TTL from the timeout keys: B's still counts.
    expect(await read.release(redis, name, a, '30000')).toBe('held');
    expect(await redis.pttl(name)).toBeGreaterThan(59_000);
  });

  it('the writer field ends with ":write", re-entry renews the lease without adding it, release publishes "1"', async () => {
    expect(await write.acquire(redis, name, c, 30_000)).toMatchObject({ acquired: true, holds: 1, fence: 1 });
    let keys = await dump(redis);
    expect(keys[name]).toMatchObject({ type: 'hash', value: { mode: 'write', [`${c}:write`]: '1' } });
    await redis.pexpire(name, 20_000);
    const again = await write.acquire(redis, name, c, 30_000);
    // Redisson would add the lease to the 20 s left (50 s); here the re-entry renews it, as the
    // RLock's does, and the reply carries no longer TTL than the lease asked for.
    expect(again).toEqual({ acquired: true, holds: 2, fence: 1, token: '30000' });
    keys = await dump(redis);
    expect(keys[name]!.value).toEqual({ mode: 'write', [`${c}:write`]: '2' });
    expect(keys[name]!.pttl).toBeGreaterThan(29_000);
    expect(keys[name]!.pttl).toBeLessThanOrEqual(30_000);
    expect((await read.acquire(redis, name, a, 30_000)).acquired).toBe(false);
    // A partial unlock re-applies the lease but never shortens what the remaining hold was promised.
    expect(await write.release(redis, name, c, '1000')).toBe('held');
    expect(await redis.pttl(name)).toBeGreaterThan(29_000);
    expect(await published.take()).toEqual([]);
    expect(await write.release(redis, name, c, '30000')).toBe('released');
    expect(await dump(redis)).toEqual(counterAt(1));
    expect(await published.take()).toEqual([{ channel, message: '1' }]);
  });

  it('downgrade: the writer takes a read hold, and its write release flips mode to "read" silently', async () => {
    await write.acquire(redis, name, c, 30_000);
    // Nested in the write hold, the read hold carries the writer's fence and draws none.
    expect(await read.acquire(redis, name, c, 30_000)).toMatchObject({ acquired: true, holds: 1, fence: 1 });
    expect(await write.acquire(redis, name, c, 30_000)).toMatchObject({ acquired: true, holds: 2, fence: 1 });
    await write.release(redis, name, c, '30000');
    let keys = await dump(redis);
    expect(keys[name]!.value).toEqual({ mode: 'write', [`${c}:write`]: '1', [c]: '1' });
    expect(keys[timeoutKey(c, 1)]).toMatchObject({ type: 'string', value: '1' });
    expect(await write.release(redis, name, c, '30000')).toBe('released');
    keys = await dump(redis);
    expect(keys[name]!.value).toEqual({ mode: 'read', [c]: '1' });
    expect(await published.take()).toEqual([]);
    expect(await read.acquire(redis, name, c, 30_000)).toMatchObject({ holds: 2, fence: 1 });
    expect(await read.acquire(redis, name, a, 30_000)).toMatchObject({ holds: 1, fence: 2 });
    await read.release(redis, name, a, '30000');
    await read.release(redis, name, c, '30000');
    expect(await read.release(redis, name, c, '30000')).toBe('released');
    expect(await dump(redis)).toEqual(counterAt(2));
    expect(await published.take()).toEqual([{ channel, message: '0' }]);
  });

  it('no read-to-write upgrade; unlock of a vanished lock publishes yet answers not-owner, as Redisson', async () => {
    await read.acquire(redis, name, c, 30_000);
    expect((await write.acquire(redis, name, c, 30_000)).acquired).toBe(false);
    await redis.del(name);
    expect(await read.release(redis, name, c, '30000')).toBe('not-owner');
    expect(await write.release(redis, name, c, '30000')).toBe('not-owner');
    expect(await published.take()).toEqual([
      { channel, message: '0' },
      { channel, message: '1' },
    ]);
    // The stale timeout and fence keys keep their own TTL; nothing but the counter is left without one.
    const { [counter]: fences, ...left } = await dump(redis);
    expect(fences).toEqual(counterAt(1)[counter]);
    expect(Object.keys(left)).toEqual([fenceKey(c), timeoutKey(c, 1)].sort());
    expect(Object.values(left).every((key) => key.pttl > 0)).toBe(true);
  });

  it('forceUnlock frees only the half whose mode the hash is in', async () => {
    await read.acquire(redis, name, a, 30_000);
    expect(await write.forceUnlock(redis, name)).toBe(false);
    expect(await read.forceUnlock(redis, name)).toBe(true);
    expect(await redis.exists(name)).toBe(0);
    expect(await published.take()).toEqual([{ channel, message: '0' }]);
    await write.acquire(redis, name, a, 30_000);
    expect(await read.forceUnlock(redis, name)).toBe(false);
    expect(await write.forceUnlock(redis, name)).toBe(true);
    expect(await published.take()).toEqual([{ channel, message: '1' }]);
  });

  it('every unlock writes its latch ("0" held, "1" freed) with a 16-20 s PX and deletes it afterwards', async () => {
    const scripts = await recordScriptCommands(context.server.client());
    try {
      const latches = async () =>
        (await scripts.take())
          .filter(([command]) => command === 'set')
          .map(([, key, value, px, ms]) => {
            expect(key).toMatch(/^redisson_unlock_latch:\{orders:42\}:[0-9a-f]{32}$/);
            expect(px).toBe('px');
            expect(Number(ms)).toBeGreaterThanOrEqual(16_000);
            expect(Number(ms)).toBeLessThanOrEqual(20_000);
            return value;
          });
      await read.acquire(redis, name, a, 30_000);
      await read.acquire(redis, name, a, 30_000);
      await scripts.take();
      await read.release(redis, name, a, '30000');
      await read.release(redis, name, a, '30000');
      expect(await latches()).toEqual(['0', '1']);
      await write.acquire(redis, name, c, 30_000);
      await write.acquire(redis, name, c, 30_000);
      await scripts.take();
      await write.release(redis, name, c, '30000');
      await write.release(redis, name, c, '30000');
      expect(await latches()).toEqual(['0', '1']);
      expect(await dump(redis)).toEqual(counterAt(2));
    } finally {
      scripts.stop();
    }
  });
});
