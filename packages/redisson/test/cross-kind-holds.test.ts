import { waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Redisson } from '../src/index.js';
import { type RedissonSetup, useRedisson } from './helpers/server.js';
import { JavaPeer } from './peer/java-peer.js';

/**
 * One thread's holds of one name through lock objects that count in the same hash field (an
 * RLock, a fenced lock and a fair lock of one name are one hash to Redisson), and a hold past
 * its lease, which no unlock of this client may take off any more.
 */
describe('holds of one thread through several lock kinds of one name', () => {
  let redis!: Redis;
  let redisson!: Redisson;
  let peer!: JavaPeer;
  useRedisson((setup: RedissonSetup) => {
    ({ redis, redisson } = setup);
    peer = new JavaPeer(setup.server.client(), setup.server.client());
  });

  it('an RLock and a fenced lock of one name are one lock: either unlocks what the other locked, as RFencedLock.unlock does', async () => {
    const plain = redisson.getLock('orders:both');
    const fenced = redisson.getFencedLock('orders:both');
    const seen: { counts: string[][]; unlocks: string[] } = { counts: [], unlocks: [] };
    await redisson.run(async () => {
      await plain.lock();
      await fenced.lockAndGetToken();
      await plain.lock();
      for (const lock of [fenced, fenced, plain]) {
        seen.unlocks.push(
          await lock.unlock().then(
            () => 'ok',
            (error: Error) => error.name,
          ),
        );
        seen.counts.push(await redis.hvals('orders:both'));
      }
      seen.unlocks.push(
        await fenced.unlock().then(
          () => 'ok',
          (error: Error) => error.name,
        ),
      );
    });
    expect(seen).toEqual({ counts: [['2'], ['1'], []], unlocks: ['ok', 'ok', 'ok', 'NotOwnerError'] });
    expect(await peer.tryLockOnce('orders:both', 1)).toBeNull();
  });

  it("an unlock past the hold's lease never touches the Java thread that took the lock since and renewed it", async () => {
    const lock = redisson.getLock('orders:java');
    await lock.lock({ threadId: 1, lease: 500 });
    await waitFor('the lease over', async () => (await redis.exists('orders:java')) === 0);
    expect(await peer.tryLockOnce('orders:java', 1)).toBeNull();
    expect(await peer.renew('orders:java', 1)).toBe(true);
    const outcome = await lock.unlock({ threadId: 1 }).then(
      () => 'ok',
      (error: Error) => error.name,
    );
    expect(outcome).toBe('NotOwnerError');
    expect(await redis.hgetall('orders:java')).toEqual({ [peer.owner(1)]: '1' });
    expect(await redis.pttl('orders:java')).toBeGreaterThan(29_000);
  });

  for (const kind of ['getLock', 'getFencedLock', 'getFairLock'] as const) {
    it(`${kind}: a hold whose lease ran out answers NotOwnerError`, async () => {
      const lock = redisson[kind]('orders:gone');
      const outcome = await redisson.run(async () => {
        await lock.lock({ lease: 1_000 });
        await waitFor('the lease over', async () => (await redis.exists('orders:gone')) === 0);
        return lock.unlock().then(
          () => 'ok',
          (error: Error) => error.name,
        );
      });
      expect(outcome).toBe('NotOwnerError');
      expect(await redis.exists('orders:gone')).toBe(0);
    });
  }
});
