import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Redisson, RLock } from '../src/index.js';
import { useRedisson } from './helpers/server.js';

/** A lease far longer than the test: a key that lives as long as it would outlive every cycle. */
const HOUR = 3_600_000;

/**
 * Audit D4: an attempt latch protects the holds its attempt counted, so it must not outlive
 * them. With one latch per attempt living as long as the lease, every lock/unlock cycle with a
 * 1 h lease left a key behind for an hour (~360k at 100 acquisitions/s).
 */
describe('attempt latches end with the holds they protect', () => {
  let redis!: Redis;
  let redisson!: Redisson;
  useRedisson((setup) => {
    ({ redis, redisson } = setup);
  });

  const attemptKeys = () => redis.keys('redisson_lock_attempt:*');

  const kinds: [kind: string, lock: (name: string) => RLock][] = [
    ['RLock', (name) => redisson.getLock(name)],
    ['fenced lock', (name) => redisson.getFencedLock(name)],
    ['fair lock', (name) => redisson.getFairLock(name)],
    ['write lock', (name) => redisson.getReadWriteLock(name).writeLock()],
    ['read lock', (name) => redisson.getReadWriteLock(name).readLock()],
  ];

  it.each(kinds)('%s: lock/unlock cycles with a 1 h lease leave no attempt key', async (kind, make) => {
    const lock = make(`cycles:${kind}`);
    const held: string[][] = [];
    await redisson.run(async () => {
      for (let cycle = 0; cycle < 50; cycle++) {
        await lock.lock({ lease: HOUR });
        await lock.lock({ lease: HOUR });
        held.push(await attemptKeys());
        await lock.unlock();
        await lock.unlock();
      }
    });
    expect(await attemptKeys()).toEqual([]);
    // While held, both attempts were recorded (a copy of either must find its own), in one key.
    expect(held.map((keys) => keys.length)).toEqual(held.map(() => 1));
  });

  /** Each kind with the threads that hold it at once when it is forced open: readers share. */
  const forced: [kind: string, lock: (name: string) => RLock, threads: number[]][] = kinds.map(
    ([kind, make]) => [kind, make, kind === 'read lock' ? [1, 2] : [1]],
  );

  it.each(forced)('%s: forceUnlock leaves no attempt key of the holders', async (kind, make, threads) => {
    const lock = make(`forced:${kind}`);
    for (const threadId of threads) await lock.lock({ threadId, lease: HOUR });
    expect((await attemptKeys()).length).toBe(threads.length);
    expect(await lock.forceUnlock()).toBe(true);
    expect(await attemptKeys()).toEqual([]);
  });

  it('an outer hold re-entered over and over keeps no more attempts than it has holds', async () => {
    const lock = redisson.getLock('outer');
    await redisson.run(async () => {
      await lock.lock();
      for (let cycle = 0; cycle < 200; cycle++) {
        await lock.lock({ lease: HOUR });
        await lock.unlock();
      }
      const keys = await attemptKeys();
      expect(keys.length).toBe(1);
      expect(await redis.llen(keys[0]!)).toBeLessThanOrEqual(2);
      await lock.unlock();
    });
    expect(await attemptKeys()).toEqual([]);
  });
});
