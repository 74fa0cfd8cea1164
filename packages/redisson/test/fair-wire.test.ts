import { randomUUID } from 'node:crypto';
import { InvalidOptionError } from '@lock/core';
import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { FairLockProtocol } from '../src/fair/protocol.js';
import { dump } from './helpers/observe.js';
import { useRedis } from './helpers/server.js';

const name = 'orders:42';
const queue = 'redisson_lock_queue:{orders:42}';
const zset = 'redisson_lock_timeout:{orders:42}';
const channel = 'redisson_lock__channel:{orders:42}';
const token = 'redisson_lock_token:{orders:42}';

describe('fair lock wire format (protocols/redisson.md §2 and Appendix A §2)', () => {
  const context = useRedis();
  let now = 1_795_305_388_030;
  const protocol = new FairLockProtocol({ now: () => now });
  const [a, b, c, d] = [1, 2, 3, 4].map(() => `${randomUUID()}:1`) as [string, string, string, string];

  let redis: Redis;
  let published: typeof context.published;
  beforeEach(() => {
    ({ redis, published } = context);
    now = 1_795_305_388_030;
  });

  it('queues waiters with deadlines one allowance apart, wakes only the head, and serves in order', async () => {
    expect(await protocol.acquire(redis, name, a, 30_000)).toMatchObject({
      acquired: true,
      holds: 1,
      fence: 1,
    });
    now += 104;
    const waitB = await protocol.acquire(redis, name, b, 30_000);
    expect(waitB.acquired).toBe(false);
    const ttlB = waitB.acquired ? 0 : waitB.remaining;
    expect(ttlB).toBeGreaterThan(29_000);
    now += 105;
    const waitC = await protocol.acquire(redis, name, c, 30_000);
    // C expects to wait for B's whole allowance: score(B) - now.
    expect(waitC).toEqual({ acquired: false, remaining: now - 105 + ttlB + 300_000 - now });

    let keys = await dump(redis);
    expect(Object.keys(keys)).toEqual([name, queue, zset, token]);
    expect(keys[token]).toEqual({ type: 'string', pttl: -1, value: '1' });
    expect(keys[name]).toMatchObject({ type: 'hash', value: { [a]: '1' } });
    expect(keys[queue]).toEqual({ type: 'list', pttl: -1, value: [b, c] });
    expect(keys[zset]).toEqual({
      type: 'zset',
      pttl: -1,
      value: { [b]: now - 105 + ttlB + 300_000, [c]: now - 105 + ttlB + 600_000 },
    });

    // A retry while queued changes nothing; a no-wait try is refused without queueing.
    now += 600;
    const retryB = await protocol.acquire(redis, name, b, 30_000);
    expect(retryB.acquired).toBe(false);
    expect((await protocol.acquire(redis, name, d, 30_000, { wait: 0 })).acquired).toBe(false);
    expect(await redis.lrange(queue, 0, -1)).toEqual([b, c]);

    expect(await protocol.release(redis, name, a, '30000')).toBe('released');
    expect(await published.take()).toEqual([{ channel: `${channel}:${b}`, message: '0' }]);

    // C is not the head: it keeps waiting although the lock is free.
    expect(await protocol.acquire(redis, name, c, 30_000)).toEqual({ acquired: false, remaining: 0 });
    expect(await protocol.acquire(redis, name, b, 30_000)).toMatchObject({
      acquired: true,
      holds: 1,
      fence: 2,
    });
    expect(await protocol.acquire(redis, name, b, 30_000)).toMatchObject({
      acquired: true,
      holds: 2,
      fence: 2,
    });
    keys = await dump(redis);
    expect(keys[name]!.value).toEqual({ [b]: '2' });
    expect(keys[queue]!.value).toEqual([c]);
    expect(keys[zset]!.value).toEqual({ [c]: now - 600 - 105 + ttlB + 300_000 });

    await protocol.abandon(redis, name, c, { wait: Number.POSITIVE_INFINITY });
    expect(Object.keys(await dump(redis))).toEqual([name, token]);
    expect(await protocol.inspect(redis, name)).toMatchObject({ held: true, owner: b, holds: 2, fence: 2 });
    expect(await protocol.forceUnlock(redis, name)).toBe(true);
    expect(await dump(redis)).toEqual({ [token]: { type: 'string', pttl: -1, value: '2' } });
    expect(await published.take()).toEqual([]);
  });

  it('a bounded wait is the allowance of the deadline it queues with and of the shift its abandon makes', async () => {
    await protocol.acquire(redis, name, a, 30_000);
    const waitB = await protocol.acquire(redis, name, b, 30_000, { wait: 50 });
    const expectedB = waitB.acquired ? -1 : waitB.remaining;
    expect(Number(await redis.zscore(zset, b))).toBe(now + expectedB + 50);
    const waitC = await protocol.acquire(redis, name, c, 30_000, { wait: 20_000 });
    expect(waitC).toEqual({ acquired: false, remaining: expectedB + 50 });
    const deadlineC = Number(await redis.zscore(zset, c));
    expect(deadlineC).toBe(now + expectedB + 50 + 20_000);
    await protocol.abandon(redis, name, b, { wait: 50 });
    expect(await redis.lrange(queue, 0, -1)).toEqual([c]);
    expect(Number(await redis.zscore(zset, c))).toBe(deadlineC - 50);
    await protocol.abandon(redis, name, c, { wait: 20_000 });
    expect(Object.keys(await dump(redis))).toEqual([name, token]);
  });

  it('drops a dead head waiter (deadline passed) so a newcomer can take the free lock', async () => {
    await protocol.acquire(redis, name, a, 30_000);
    expect((await protocol.acquire(redis, name, b, 30_000, { wait: 50 })).acquired).toBe(false);
    await redis.del(name);
    now += 40_000;
    expect(await protocol.acquire(redis, name, d, 30_000)).toMatchObject({ acquired: true });
    const keys = await dump(redis);
    expect(Object.keys(keys)).toEqual([name, token]);
    expect(keys[name]!.value).toEqual({ [d]: '1' });
  });

  it('keeps a head waiter that has no deadline, as Redisson does: it may be alive, and the lock is its', async () => {
    await protocol.acquire(redis, name, a, 30_000);
    expect((await protocol.acquire(redis, name, b, 30_000)).acquired).toBe(false);
    expect((await protocol.acquire(redis, name, c, 30_000)).acquired).toBe(false);
    // B's score gone (evicted, deleted by hand), then the lock freed without a release.
    await redis.zrem(zset, b);
    await redis.del(name);
    now += 40_000;
    expect((await protocol.acquire(redis, name, c, 30_000)).acquired).toBe(false);
    expect(await redis.lrange(queue, 0, -1)).toEqual([b, c]);
    expect(await protocol.acquire(redis, name, b, 30_000)).toMatchObject({ acquired: true });
    expect(await redis.lrange(queue, 0, -1)).toEqual([c]);
  });

  it('a fence counter that cannot be incremented fails the attempt before anything is written', async () => {
    await protocol.acquire(redis, name, a, 30_000);
    await protocol.acquire(redis, name, d, 30_000, { wait: 50 });
    await protocol.acquire(redis, name, b, 30_000);
    await protocol.acquire(redis, name, c, 30_000);
    await redis.del(name);
    // D's 50 ms allowance is over, B's and C's are not: B heads the queue of the living.
    now += 40_000;
    await redis.set(token, 'not-a-number');
    const before = await dump(redis);
    const attempt = { wait: Number.POSITIVE_INFINITY, attempt: 'b1' };
    await expect(protocol.acquire(redis, name, b, 30_000, attempt)).rejects.toThrow(/not an integer/);
    expect(await dump(redis)).toEqual(before);
    // With a counter again, the same attempt has Redisson's effects: D dropped, B out of the
    // queue and holding, C one allowance closer.
    await redis.set(token, '5');
    expect(await protocol.acquire(redis, name, b, 30_000, attempt)).toMatchObject({ holds: 1, fence: 6 });
    expect(await redis.hgetall(name)).toEqual({ [b]: '1' });
    expect(await redis.lrange(queue, 0, -1)).toEqual([c]);
    expect(Number(await redis.zscore(zset, c))).toBe(
      (before[zset]!.value as Record<string, number>)[c]! - 300_000,
    );
  });

  it('refuses a bad wait timeout or clock up front, naming it', () => {
    for (const waitTimeout of [0, -1, 1.5, Number.NaN, '300000']) {
      const error = (() => {
        try {
          return new FairLockProtocol({ waitTimeout: waitTimeout as number });
        } catch (thrown) {
          return thrown;
        }
      })();
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option: 'waitTimeout' });
      expect((error as Error).message).toContain(String(waitTimeout));
    }
    expect(() => new FairLockProtocol({ now: 5 as never })).toThrow(InvalidOptionError);
  });

  it('unlocking a lock that is already gone succeeds and wakes the head, as Redisson does', async () => {
    await protocol.acquire(redis, name, a, 30_000);
    await protocol.acquire(redis, name, b, 30_000);
    await redis.del(name);
    expect(await protocol.release(redis, name, c, '30000')).toBe('released');
    expect(await published.take()).toEqual([{ channel: `${channel}:${b}`, message: '0' }]);
    await protocol.acquire(redis, name, b, 30_000);
    expect(await protocol.release(redis, name, c, '30000')).toBe('not-owner');
  });
});
