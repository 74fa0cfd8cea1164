import { randomUUID } from 'node:crypto';
import { InvalidOptionError } from '@lock/core';
import { waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { FairLockProtocol } from '../src/fair/protocol.js';
import { RLockProtocol } from '../src/lock/protocol.js';
import { dump } from './helpers/observe.js';
import { useRedis } from './helpers/server.js';
import { JavaPeer } from './peer/java-peer.js';

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
    expect(() => new FairLockProtocol({ turnGrace: 0 })).toThrow(/turnGrace/);
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

  describe('a grant the engine gives back (its reply came after the attempt timed out)', () => {
    const latches = (owner: string) => `redisson_lock_attempt:{orders:42}:${owner}`;
    const waiting = (attempt: string) => ({ wait: Number.POSITIVE_INFINITY, attempt });
    /** A kept turn's latch: its fence (2) and when the kept grant ends, in the server's ms. */
    const keptMarker = expect.stringMatching(/^2::\d+$/);

    /** A holds; B, then C, wait; A unlocks and B's attempt b1 (one that may wait unless told) takes the lock in its turn. */
    async function grantInTurn(wait = Number.POSITIVE_INFINITY) {
      await protocol.acquire(redis, name, a, 30_000, waiting('a1'));
      await protocol.acquire(redis, name, b, 30_000, waiting('b0'));
      await protocol.acquire(redis, name, c, 30_000, waiting('c0'));
      await protocol.release(redis, name, a, '30000');
      expect(await protocol.acquire(redis, name, b, 30_000, { wait, attempt: 'b1' })).toMatchObject({
        acquired: true,
        holds: 1,
        fence: 2,
      });
      await published.take();
    }

    it('stays with the waiter while others wait, for its next attempt to claim with the same fence', async () => {
      await grantInTurn();
      const deadlineC = Number(await redis.zscore(zset, c));
      expect(await protocol.undo(redis, name, b, '30000', 'b1')).toBe('held');
      // The head is told, so that a Java waiter polls again and sleeps no longer than the kept grant.
      expect(await published.take()).toEqual([{ channel: `${channel}:${c}`, message: '0' }]);
      const kept = await dump(redis);
      expect(kept[name]!.value).toEqual({ [b]: '1' });
      expect(kept[name]!.pttl).toBeGreaterThan(0);
      expect(kept[name]!.pttl).toBeLessThanOrEqual(2_000);
      expect(kept[latches(b)]!.value).toEqual([keptMarker]);
      expect(kept[queue]!.value).toEqual([c]);
      expect(kept[zset]!.value).toEqual({ [c]: deadlineC });
      // Sent again, the undo finds its attempt gone and changes nothing.
      expect(await protocol.undo(redis, name, b, '30000', 'b1')).toBe('held');
      expect((await dump(redis))[latches(b)]!.value).toEqual(kept[latches(b)]!.value);
      expect(await published.take()).toEqual([]);
      // C waits for B as for any holder, and so does a Java newcomer (queued behind C).
      expect((await protocol.acquire(redis, name, c, 30_000, waiting('c1'))).acquired).toBe(false);
      const java = new JavaPeer(redis, redis);
      expect(await java.fairTryLockOnce(name, 1, 300_000, now)).toBeGreaterThan(0);
      expect(await redis.lrange(queue, 0, -1)).toEqual([c, java.owner(1)]);

      expect(await protocol.acquire(redis, name, b, 30_000, waiting('b2'))).toEqual({
        acquired: true,
        holds: 1,
        fence: 2,
        token: '30000',
      });
      expect(await redis.hgetall(name)).toEqual({ [b]: '1' });
      expect(await redis.pttl(name)).toBeGreaterThan(29_000);
      expect(await redis.lrange(latches(b), 0, -1)).toEqual(['2:b2']);
      expect(await redis.get(token)).toBe('2');
      expect(await protocol.release(redis, name, b, '30000')).toBe('released');
      expect(await published.take()).toEqual([{ channel: `${channel}:${c}`, message: '0' }]);
      expect(await protocol.acquire(redis, name, c, 30_000, waiting('c2'))).toMatchObject({ fence: 3 });
    });

    it('goes to the head of the queue at once when the waiter gives up', async () => {
      await grantInTurn();
      await protocol.undo(redis, name, b, '30000', 'b1');
      await published.take();
      await protocol.abandon(redis, name, b, waiting('b2'));
      expect(await published.take()).toEqual([{ channel: `${channel}:${c}`, message: '0' }]);
      expect(Object.keys(await dump(redis))).toEqual([queue, zset, token]);
      expect(await protocol.acquire(redis, name, c, 30_000, waiting('c1'))).toMatchObject({ holds: 1 });
    });

    it('lapses to the head of the queue when no attempt claims it, its latch with it', async () => {
      // Short, for the test to wait it out, yet long enough that the dump right after the undo
      // still finds the kept grant on a loaded host (a 300 ms one could lapse first).
      const grace = 1_500;
      const brief = new FairLockProtocol({ now: () => now, turnGrace: grace });
      await grantInTurn();
      await brief.undo(redis, name, b, '30000', 'b1');
      // Every key this package writes expires: the latch list lasts as long as the kept grant.
      const kept = await dump(redis);
      expect(kept[latches(b)]!.value).toEqual([keptMarker]);
      expect(kept[latches(b)]!.pttl).toBeGreaterThan(0);
      expect(kept[latches(b)]!.pttl).toBeLessThanOrEqual(grace);
      await waitFor('the kept grant expired', async () => (await redis.exists(name)) === 0);
      expect(await redis.pttl(latches(b))).toBe(-2);
      expect(await protocol.acquire(redis, name, c, 30_000, waiting('c1'))).toMatchObject({ holds: 1 });
    });

    it('lets a Java waiter at the head take the lock soon after the kept grant lapses, not at its wait', async () => {
      // Deadlines on the real clock, as the Java waiter writes its own.
      const real = new FairLockProtocol({ turnGrace: 300 });
      const java = new JavaPeer(context.server.client(), context.server.client());
      await real.acquire(redis, name, a, 30_000, waiting('a1'));
      await real.acquire(redis, name, b, 30_000, waiting('b0'));
      const evals = async () =>
        Number(/cmdstat_eval:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
      const before = await evals();
      let javaAt = Number.NaN;
      const javaWaits = java.fairTryLock(name, 1, 10_000).then((got) => {
        javaAt = performance.now();
        return got;
      });
      // Queued, subscribed, and polled again: asleep on A's 30 s lease, bounded by its 10 s wait.
      await waitFor('the Java waiter asleep', async () => (await evals()) >= before + 2);
      await real.release(redis, name, a, '30000');
      expect((await real.acquire(redis, name, b, 30_000, waiting('b1'))).acquired).toBe(true);
      expect(await real.undo(redis, name, b, '30000', 'b1')).toBe('held');
      const keptAt = performance.now();
      // B's next attempt never comes (it died, or stays cut off).
      expect(await javaWaits).toBe(true);
      expect(javaAt - keptAt).toBeLessThan(2_000);
      await java.fairUnlock(name, 1);
    }, 20_000);

    describe('re-entered by the same thread through getLock while kept', () => {
      const plain = new RLockProtocol();
      // The RLock unlock tells the fair waiters' dead from the live on this process's clock.
      beforeEach(() => {
        now = Date.now();
      });

      async function reenter() {
        await grantInTurn();
        await protocol.undo(redis, name, b, '30000', 'b1');
        expect(await plain.acquire(redis, name, b, 30_000, waiting('r1'))).toMatchObject({
          holds: 2,
          fence: 2,
        });
        expect(await redis.lrange(latches(b), 0, -1)).toEqual(['2:r1', keptMarker]);
      }

      it('keeps the re-entry when the waiter gives up, taking off the kept hold only', async () => {
        await reenter();
        await published.take();
        await protocol.abandon(redis, name, b, waiting('b2'));
        expect(await redis.hgetall(name)).toEqual({ [b]: '1' });
        expect(await redis.pttl(name)).toBeGreaterThan(29_000);
        // The kept turn's marker gives way to the one that has the re-entry's last unlock wake the queue.
        expect(await redis.lrange(latches(b), 0, -1)).toEqual(['2:r1', '::wake']);
        expect(await redis.lrange(queue, 0, -1)).toEqual([c]);
        expect(await published.take()).toEqual([]);
        expect(await plain.release(redis, name, b, '30000')).toBe('released');
      });

      it('gives the kept hold back its own deadline, and wakes the head, once the re-entry is unlocked', async () => {
        await reenter();
        await published.take();
        expect(await plain.release(redis, name, b, '30000')).toBe('held');
        expect(await redis.hgetall(name)).toEqual({ [b]: '1' });
        // The kept grant's, not the 30 s the re-entry had: a waiter that died leaves the queue held that long only.
        // The TTL, the marker and the server's clock read in one transaction, at one instant: read
        // one round trip apart, a stall between them would count as a mismatch.
        const [ttl, entries, [seconds, micros]] = (await redis
          .multi()
          .pttl(name)
          .lrange(latches(b), 0, -1)
          .time()
          .exec())!.map(([, value]) => value) as [number, string[], [string, string]];
        expect(ttl).toBeLessThanOrEqual(2_000);
        const marker = entries.find((entry) => entry.includes('::'));
        const left =
          Number(marker?.split('::')[1]) - (Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000));
        expect(Math.abs(left - ttl)).toBeLessThan(100);
        // A Java head that polled during the re-entry sleeps on its 30 s: told, it polls again.
        expect(await published.take()).toEqual([{ channel: `${channel}:${c}`, message: '0' }]);
        expect(await protocol.acquire(redis, name, b, 30_000, waiting('b2'))).toMatchObject({
          acquired: true,
          holds: 1,
          fence: 2,
        });
        expect(await redis.pttl(name)).toBeGreaterThan(29_000);
      });

      it('keeps the turn through re-entries unlocked and taken again, and frees it when the waiter gives up', async () => {
        await reenter();
        expect(await plain.release(redis, name, b, '30000')).toBe('held');
        expect(await plain.acquire(redis, name, b, 30_000, waiting('r2'))).toMatchObject({ holds: 2 });
        // The unlock took no latch out: r1's, of a hold given back, goes before the marker does.
        expect(await redis.lrange(latches(b), 0, -1)).toEqual(['2:r2', keptMarker]);
        await published.take();
        expect(await plain.release(redis, name, b, '30000')).toBe('held');
        expect(await redis.pttl(name)).toBeLessThanOrEqual(2_000);
        expect(await published.take()).toEqual([{ channel: `${channel}:${c}`, message: '0' }]);
        await protocol.abandon(redis, name, b, waiting('b2'));
        expect(await published.take()).toEqual([{ channel: `${channel}:${c}`, message: '0' }]);
        expect(Object.keys(await dump(redis))).toEqual([queue, zset, token]);
        expect(await protocol.acquire(redis, name, c, 30_000, waiting('c1'))).toMatchObject({
          holds: 1,
          fence: 3,
        });
      });

      it('wakes the first live waiter once the re-entry is unlocked, dropping the dead ones ahead of it', async () => {
        await reenter();
        expect((await protocol.acquire(redis, name, d, 30_000, waiting('d0'))).acquired).toBe(false);
        // C's process died long ago: its deadline has passed.
        await redis.zadd(zset, Date.now() - 1_000, c);
        await published.take();
        expect(await plain.release(redis, name, b, '30000')).toBe('held');
        expect(await published.take()).toEqual([{ channel: `${channel}:${d}`, message: '0' }]);
        expect(await redis.lrange(queue, 0, -1)).toEqual([d]);
        expect(await redis.zrange(zset, '0', '-1')).toEqual([d]);
      });

      it('answers both holds when the waiter claims its turn', async () => {
        await reenter();
        expect(await protocol.acquire(redis, name, b, 30_000, waiting('b2'))).toMatchObject({
          acquired: true,
          holds: 2,
          fence: 2,
        });
        expect(await redis.hgetall(name)).toEqual({ [b]: '2' });
        expect(await redis.pttl(name)).toBeGreaterThan(29_000);
        expect(await protocol.release(redis, name, b, '30000')).toBe('held');
        expect(await protocol.release(redis, name, b, '30000')).toBe('released');
      });
    });

    it('is freed for the head of the queue when the attempt could not wait: it took no turn', async () => {
      await grantInTurn(0);
      expect(await redis.lrange(latches(b), 0, -1)).toEqual(['2:b1!']);
      expect(await protocol.undo(redis, name, b, '30000', 'b1')).toBe('released');
      expect(await published.take()).toEqual([{ channel: `${channel}:${c}`, message: '0' }]);
      expect(Object.keys(await dump(redis))).toEqual([queue, zset, token]);
      expect(await protocol.acquire(redis, name, c, 30_000, waiting('c1'))).toMatchObject({ holds: 1 });
    });

    it('is freed at once when nobody waits, and a re-entry given back takes off its own hold only', async () => {
      await protocol.acquire(redis, name, a, 30_000, waiting('a1'));
      await protocol.acquire(redis, name, a, 30_000, waiting('a2'));
      expect(await protocol.undo(redis, name, a, '30000', 'a2')).toBe('held');
      expect(await protocol.undo(redis, name, a, '30000', 'a2')).toBe('held');
      expect(await redis.hgetall(name)).toEqual({ [a]: '1' });
      expect(await protocol.undo(redis, name, a, '30000', 'a1')).toBe('released');
      expect(Object.keys(await dump(redis))).toEqual([token]);
      expect(await protocol.undo(redis, name, a, '30000', 'a1')).toBe('not-owner');
      expect(await published.take()).toEqual([]);
    });
  });
});
