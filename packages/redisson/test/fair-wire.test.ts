import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { FairLockProtocol } from '../src/fair/protocol.js';
import { dump } from './helpers/observe.js';
import { useRedis } from './helpers/server.js';

const name = 'orders:42';
const queue = 'redisson_lock_queue:{orders:42}';
const zset = 'redisson_lock_timeout:{orders:42}';
const channel = 'redisson_lock__channel:{orders:42}';

describe('fair lock wire format (protocols/redisson.md §2 and Appendix A §2)', () => {
  const context = useRedis();
  let now = 1_795_305_388_030;
  const protocol = new FairLockProtocol(() => now);
  const [a, b, c, d] = [1, 2, 3, 4].map(() => `${randomUUID()}:1`) as [string, string, string, string];

  let redis: Redis;
  let published: typeof context.published;
  beforeEach(() => {
    ({ redis, published } = context);
    now = 1_795_305_388_030;
  });

  it('queues waiters with deadlines one allowance apart, wakes only the head, and serves in order', async () => {
    expect(await protocol.acquire(redis, name, a, 30_000)).toMatchObject({ acquired: true, holds: 1 });
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
    expect(Object.keys(keys)).toEqual([name, queue, zset]);
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
    protocol.expect(name, d, { queue: false, allowance: 300_000 });
    expect((await protocol.acquire(redis, name, d, 30_000)).acquired).toBe(false);
    protocol.forget(name, d);
    expect(await redis.lrange(queue, 0, -1)).toEqual([b, c]);

    expect(await protocol.release(redis, name, a, '30000')).toBe('released');
    expect(await published.take()).toEqual([{ channel: `${channel}:${b}`, message: '0' }]);

    // C is not the head: it keeps waiting although the lock is free.
    expect(await protocol.acquire(redis, name, c, 30_000)).toEqual({ acquired: false, remaining: 0 });
    expect(await protocol.acquire(redis, name, b, 30_000)).toMatchObject({ acquired: true, holds: 1 });
    keys = await dump(redis);
    expect(keys[name]!.value).toEqual({ [b]: '1' });
    expect(keys[queue]!.value).toEqual([c]);
    expect(keys[zset]!.value).toEqual({ [c]: now - 600 - 105 + ttlB + 300_000 });

    await protocol.giveUp(redis, name, c, 300_000);
    expect(Object.keys(await dump(redis))).toEqual([name]);
    expect(await protocol.forceUnlock(redis, name)).toBe(true);
    expect(await dump(redis)).toEqual({});
    expect(await published.take()).toEqual([]);
  });

  it('drops a dead head waiter (deadline passed) so a newcomer can take the free lock', async () => {
    await protocol.acquire(redis, name, a, 30_000);
    protocol.expect(name, b, { queue: true, allowance: 50 });
    expect((await protocol.acquire(redis, name, b, 30_000)).acquired).toBe(false);
    protocol.forget(name, b);
    await redis.del(name);
    now += 40_000;
    expect(await protocol.acquire(redis, name, d, 30_000)).toMatchObject({ acquired: true });
    const keys = await dump(redis);
    expect(Object.keys(keys)).toEqual([name]);
    expect(keys[name]!.value).toEqual({ [d]: '1' });
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
