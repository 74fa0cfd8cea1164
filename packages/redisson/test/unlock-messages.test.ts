import { type RedisServer, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createRedisson, type Redisson } from '../src/index.js';
import { useRedisson } from './helpers/server.js';

/** A waiter that nothing wakes polls only after 25 s: a hand-over within the test can only come from a message. */
const SLOW_POLL = { base: 25_000, max: 25_000, jitter: 0 };

/** Issue 15 item 14: unlock latches, the subscriber connection, and who a write unlock wakes. */
describe('unlock messages and the subscriber connection', () => {
  let server!: RedisServer;
  let redis!: Redis;
  let redisson!: Redisson;
  useRedisson(
    (setup) => {
      ({ server, redis, redisson } = setup);
    },
    { retry: SLOW_POLL },
  );

  /** Connections subscribed to anything (plain or sharded channels). */
  const subscribers = async () =>
    ((await redis.client('LIST')) as string)
      .split('\n')
      .filter((line) => /\b(sub|ssub|psub)=[1-9]/.test(line)).length;

  it('a write unlock wakes every reader waiting in this process at once', async () => {
    const rw = redisson.getReadWriteLock('stock:1');
    await rw.writeLock().lock({ threadId: 1 });
    const readers = [2, 3, 4].map((threadId) => rw.readLock().tryLock({ threadId, wait: 10_000 }));
    await waitFor('a subscriber on the channel', async () => (await subscribers()) > 0);
    const unlockedAt = performance.now();
    await rw.writeLock().unlock({ threadId: 1 });
    expect(await Promise.all(readers)).toEqual([true, true, true]);
    // Far below the 25 s poll and the 10 s wait: each reader was woken by the one message.
    expect(performance.now() - unlockedAt).toBeLessThan(5_000);
    for (const threadId of [2, 3, 4]) await rw.readLock().unlock({ threadId });
  });

  it('waiters on every lock kind share one subscriber connection', async () => {
    const names = ['kinds:lock', 'kinds:fair', 'kinds:fenced', 'kinds:rw'];
    const [lock, fair, fenced] = [
      redisson.getLock(names[0]!),
      redisson.getFairLock(names[1]!),
      redisson.getFencedLock(names[2]!),
    ];
    const rw = redisson.getReadWriteLock(names[3]!);
    await lock.lock({ threadId: 1 });
    await fair.lock({ threadId: 1 });
    await fenced.lock({ threadId: 1 });
    await rw.readLock().lock({ threadId: 1 });
    const waiting = [
      lock.tryLock({ threadId: 2, wait: 10_000 }),
      fair.tryLock({ threadId: 2, wait: 10_000 }),
      fenced.tryLock({ threadId: 2, wait: 10_000 }),
      rw.writeLock().tryLock({ threadId: 2, wait: 10_000 }),
    ];
    const channels = async () => ((await redis.pubsub('CHANNELS', '*kinds:*')) as string[]).length;
    await waitFor('every waiter subscribed', async () => (await channels()) === 4);
    expect(await subscribers()).toBe(1);
    await lock.unlock({ threadId: 1 });
    await fair.unlock({ threadId: 1 });
    await fenced.unlock({ threadId: 1 });
    await rw.readLock().unlock({ threadId: 1 });
    expect(await Promise.all(waiting)).toEqual([true, true, true, true]);
    await lock.unlock({ threadId: 2 });
    await fair.unlock({ threadId: 2 });
    await fenced.unlock({ threadId: 2 });
    await rw.writeLock().unlock({ threadId: 2 });
  });

  it('an unlock whose latch DEL fails still succeeds: the latch expires by itself', async () => {
    const client = server.client();
    const failing = createRedisson({ redis: client });
    try {
      client.del = () => Promise.reject(new Error('connection lost before DEL'));
      const lock = failing.getLock('latched');
      await lock.lock({ threadId: 1 });
      await lock.unlock({ threadId: 1 });
      expect(await redis.exists('latched')).toBe(0);
      const [latch] = await redis.keys('redisson_unlock_latch:*');
      expect(await redis.pttl(latch!)).toBeGreaterThan(15_000);
    } finally {
      await failing.shutdown();
      client.disconnect();
    }
  });
});
