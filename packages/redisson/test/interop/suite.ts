import { setTimeout as sleep } from 'node:timers/promises';
import { NotOwnerError } from '@lock/core';
import { waitFor } from '@lock/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { keysWithoutTtl } from '../../../core/test/contract/keys.js';
import { createRedisson, FairLockProtocol, type Redisson, RLockProtocol } from '../../src/index.js';
import { JavaPeer } from '../peer/java-peer.js';
import type { Topology } from './topology.js';

/**
 * A waiter that nothing wakes polls only after 25 s (its retry delay), and the holder's lease is
 * 30 s; a hand-over within 5 s can therefore only come from the release message.
 */
const SLOW_POLL = { base: 25_000, max: 25_000, jitter: 0 };
const WOKEN_BY_MESSAGE = 5_000;

/** Node and a Java peer (another client UUID) locking the same names on one topology. */
export function describeInterop(title: string, start: () => Promise<Topology>): void {
  describe(`interop with a Java peer: ${title}`, () => {
    let topology: Topology;
    let redisson: Redisson;
    let peer: JavaPeer;

    beforeAll(async () => {
      topology = await start();
      redisson = createRedisson({ redis: topology.redis, retry: SLOW_POLL });
      peer = new JavaPeer(topology.peerRedis, topology.peerSubscriber, topology.sharded);
    });
    afterAll(async () => {
      await redisson.shutdown();
      await topology.stop();
    });
    beforeEach(async () => {
      await topology.flush();
    });
    afterEach(async () => {
      // Only Redisson's own TTL-less keys may remain: fair-lock queues and fence counters.
      const untimed = await keysWithoutTtl(topology.redis);
      expect(untimed.filter((key) => !/^redisson_lock_(queue|timeout|token):/.test(key))).toEqual([]);
    });

    const peerSubscribed = (channel: string) =>
      waitFor(`the peer on ${channel}`, async () => peer.subscribedTo(channel), { timeout: 5_000 });
    const subscribed = (channel: string) =>
      waitFor(`a subscriber on ${channel}`, async () => (await topology.subscribers(channel)) > 0, {
        timeout: 5_000,
      });

    it('contention between the peer and the package on one key: never two holders', async () => {
      const name = 'contended:1';
      const lock = redisson.getLock(name);
      const fast = createRedisson({ redis: topology.redis });
      const fastLock = fast.getLock(name);
      let inside = 0;
      let overlaps = 0;
      let entries = 0;
      const critical = async () => {
        inside += 1;
        entries += 1;
        if (inside > 1) overlaps += 1;
        await sleep(Math.random() * 3);
        inside -= 1;
      };
      const rounds = 12;
      const peerThread = async (thread: number) => {
        for (let i = 0; i < rounds; i++) {
          expect(await peer.tryLock(name, thread, 20_000)).toBe(true);
          await critical();
          await peer.unlock(name, thread);
        }
      };
      const nodeChain = () =>
        fast.run(async () => {
          for (let i = 0; i < rounds; i++) {
            await fastLock.lock();
            await critical();
            await fastLock.unlock();
          }
        });
      await Promise.all([peerThread(1), peerThread(2), nodeChain(), nodeChain()]);
      expect(entries).toBe(4 * rounds);
      expect(overlaps).toBe(0);
      expect(await lock.isLocked()).toBe(false);
      await fast.shutdown();
    });

    it('a peer waiter subscribed on the channel is woken by our unlock', async () => {
      const name = 'wake:java';
      const channel = JavaPeer.tagged('redisson_lock__channel', name);
      const lock = redisson.getLock(name);
      await lock.lock({ threadId: 1 });
      const acquired = peer.tryLock(name, 1, 20_000);
      await peerSubscribed(channel);
      const unlockedAt = performance.now();
      await lock.unlock({ threadId: 1 });
      expect(await acquired).toBe(true);
      expect(performance.now() - unlockedAt).toBeLessThan(WOKEN_BY_MESSAGE);
      expect(peer.wakeups).toContainEqual(expect.objectContaining({ channel, message: '0' }));
      await peer.unlock(name, 1);
    });

    it('our waiter is woken by the peer unlock', async () => {
      const name = 'wake:node';
      expect(await peer.tryLockOnce(name, 1)).toBeNull();
      const lock = redisson.getLock(name);
      const acquired = lock.lock({ threadId: 1 });
      await subscribed(JavaPeer.tagged('redisson_lock__channel', name));
      const unlockedAt = performance.now();
      expect(await peer.unlock(name, 1)).toBe(1);
      await acquired;
      expect(performance.now() - unlockedAt).toBeLessThan(WOKEN_BY_MESSAGE);
      expect(await lock.isHeldByThread(1)).toBe(true);
      await lock.unlock({ threadId: 1 });
    });

    it('reentrancy from both sides: counts add up and block the other side until the last unlock', async () => {
      const name = 'reentrant:both';
      const lock = redisson.getLock(name);
      expect(await peer.tryLockOnce(name, 7)).toBeNull();
      expect(await peer.tryLockOnce(name, 7)).toBeNull();
      expect(await lock.tryLock({ threadId: 1 })).toBe(false);
      expect(await peer.unlock(name, 7)).toBe(0);
      expect(await lock.tryLock({ threadId: 1 })).toBe(false);
      expect(await peer.unlock(name, 7)).toBe(1);
      await redisson.run(async () => {
        await lock.lock();
        await lock.lock();
        expect(await topology.redis.hgetall(name)).toEqual({ [`${redisson.id}:${(await holder())!}`]: '2' });
        expect(await peer.tryLockOnce(name, 7)).toBeGreaterThan(0);
        await lock.unlock();
        expect(await peer.tryLockOnce(name, 7)).toBeGreaterThan(0);
        await lock.unlock();
      });
      expect(await peer.tryLockOnce(name, 7)).toBeNull();
      await expect(redisson.run(() => lock.unlock())).rejects.toBeInstanceOf(NotOwnerError);
      expect(await peer.unlock(name, 7)).toBe(1);

      async function holder(): Promise<string | undefined> {
        const [field] = Object.keys(await topology.redis.hgetall(name));
        return field?.slice(redisson.id.length + 1);
      }
    });

    it('a watchdog renewal touches only its own field: the peer cannot renew our lock but renews its own', async () => {
      const name = 'renewed';
      const lock = redisson.getLock(name);
      await lock.lock({ threadId: 1 });
      await topology.redis.pexpire(name, 2_000);
      expect(await peer.renew(name, 1)).toBe(false); // Java renews only its own field
      expect(await topology.redis.pttl(name)).toBeLessThanOrEqual(2_000);
      await lock.unlock({ threadId: 1 });
      expect(await peer.tryLockOnce(name, 1)).toBeNull();
      await topology.redis.pexpire(name, 2_000);
      expect(await peer.renew(name, 1)).toBe(true);
      expect(await lock.remainTimeToLive()).toBeGreaterThan(29_000);
      await peer.unlock(name, 1);
    });

    it('fair lock: Java and Node waiters are served in queue order', async () => {
      const name = 'fair:1';
      const queue = JavaPeer.tagged('redisson_lock_queue', name);
      const fair = redisson.getFairLock(name);
      const order: string[] = [];
      const queued = (n: number) =>
        waitFor(`${n} queued waiters`, async () => (await topology.redis.llen(queue)) === n, {
          timeout: 5_000,
        });
      await fair.lock({ threadId: 1 });
      const b = (async () => {
        expect(await peer.fairTryLock(name, 2, 20_000)).toBe(true);
        order.push('java B');
        await peer.fairUnlock(name, 2);
      })();
      await queued(1);
      const c = redisson.run(async () => {
        await fair.lock();
        order.push('node C');
        await fair.unlock();
      });
      await queued(2);
      const d = (async () => {
        expect(await peer.fairTryLock(name, 4, 20_000)).toBe(true);
        order.push('java D');
        await peer.fairUnlock(name, 4);
      })();
      await queued(3);
      const waiting = await topology.redis.lrange(queue, 0, -1);
      expect(waiting[0]).toBe(peer.owner(2));
      expect(waiting[1]).toMatch(new RegExp(`^${redisson.id}:\\d+$`));
      expect(waiting[2]).toBe(peer.owner(4));
      await fair.unlock({ threadId: 1 });
      await Promise.all([b, c, d]);
      expect(order).toEqual(['java B', 'node C', 'java D']);
      expect(await topology.redis.llen(queue)).toBe(0);
      expect(await topology.redis.zcard(JavaPeer.tagged('redisson_lock_timeout', name))).toBe(0);
    });

    it('fair lock: a Node waiter that gives up leaves the queue and shifts later deadlines', async () => {
      const name = 'fair:2';
      const queue = JavaPeer.tagged('redisson_lock_queue', name);
      const zset = JavaPeer.tagged('redisson_lock_timeout', name);
      const fair = redisson.getFairLock(name);
      expect(await peer.fairTryLockOnce(name, 1)).toBeNull();
      const giving = fair.tryLock({ wait: 1_000, threadId: 5 });
      await waitFor('the Node waiter queued', async () => (await topology.redis.llen(queue)) === 1, {
        timeout: 5_000,
      });
      expect(await peer.fairTryLockOnce(name, 2)).toBeGreaterThan(0);
      const before = Number(await topology.redis.zscore(zset, peer.owner(2)));
      expect(await giving).toBe(false);
      expect(await topology.redis.lrange(queue, 0, -1)).toEqual([peer.owner(2)]);
      expect(Number(await topology.redis.zscore(zset, peer.owner(2)))).toBe(before - 1_000);
      await peer.fairAcquireFailed(name, 2, 300_000);
      await peer.fairUnlock(name, 1);
    });

    it('read locks are shared and the write lock exclusive across both sides', async () => {
      const name = 'rw:1';
      const rw = redisson.getReadWriteLock(name);
      await rw.readLock().lock({ threadId: 1 });
      expect(await peer.readTryLockOnce(name, 1)).toBeNull();
      expect(await peer.writeTryLockOnce(name, 2)).toBeGreaterThan(0);
      expect(await rw.writeLock().tryLock({ threadId: 1 })).toBe(false); // no read-to-write upgrade
      await rw.readLock().unlock({ threadId: 1 });
      expect(await peer.writeTryLockOnce(name, 2)).toBeGreaterThan(0);
      expect(await peer.readUnlock(name, 1)).toBe(1);
      expect(await topology.redis.exists(name)).toBe(0);

      expect(await peer.writeTryLockOnce(name, 2)).toBeNull();
      expect(await rw.readLock().tryLock({ threadId: 1 })).toBe(false);
      expect(await rw.writeLock().tryLock({ threadId: 1 })).toBe(false);
      const reading = rw.readLock().lock({ threadId: 3 });
      await subscribed(JavaPeer.tagged('redisson_rwlock', name));
      const unlockedAt = performance.now();
      expect(await peer.writeUnlock(name, 2)).toBe(1);
      await reading;
      expect(performance.now() - unlockedAt).toBeLessThan(WOKEN_BY_MESSAGE);
      expect(await rw.readLock().isHeldByThread(3)).toBe(true);

      const writing = peer.writeTryLock(name, 9, 20_000);
      await peerSubscribed(JavaPeer.tagged('redisson_rwlock', name));
      await rw.readLock().unlock({ threadId: 3 });
      expect(await writing).toBe(true);
      expect(peer.wakeups).toContainEqual(
        expect.objectContaining({ channel: JavaPeer.tagged('redisson_rwlock', name), message: '0' }),
      );
      expect(await peer.writeUnlock(name, 9)).toBe(1);
    });

    it('a Node writer may take read locks (downgrade) and the peer reads once the write is released', async () => {
      const name = 'rw:2';
      const rw = redisson.getReadWriteLock(name);
      await redisson.run(async () => {
        await rw.writeLock().lock();
        await rw.readLock().lock();
        expect(await peer.readTryLockOnce(name, 1)).toBeGreaterThan(0);
        await rw.writeLock().unlock();
        expect(await topology.redis.hget(name, 'mode')).toBe('read');
        expect(await peer.readTryLockOnce(name, 1)).toBeNull();
        await rw.readLock().unlock();
      });
      expect(await peer.readUnlock(name, 1)).toBe(1);
      expect(await topology.redis.exists(name)).toBe(0);
    });

    it('fenced tokens grow across both sides, re-entry included', async () => {
      const name = 'fenced:1';
      const fenced = redisson.getFencedLock(name);
      const tokens: number[] = [];
      tokens.push((await peer.tryLockAndGetToken(name, 1))!);
      tokens.push((await peer.tryLockAndGetToken(name, 1))!);
      expect(await fenced.tryLockAndGetToken({ threadId: 1 })).toBeNull();
      await peer.unlock(name, 1);
      await peer.unlock(name, 1);
      await redisson.run(async () => {
        tokens.push(await fenced.lockAndGetToken());
        tokens.push(await fenced.lockAndGetToken());
        expect(await peer.tryLockAndGetToken(name, 1)).toBeNull();
        await fenced.unlock();
        await fenced.unlock();
      });
      tokens.push((await peer.tryLockAndGetToken(name, 1))!);
      expect(tokens).toEqual([1, 2, 3, 4, 5]);
      expect(await fenced.getToken()).toBe(5);
      await peer.unlock(name, 1);
    });

    it('fences: Node RLock and fair holders and FencedLock holders of both sides draw from one counter, a Java RLock none', async () => {
      const name = 'fenced:2';
      const counter = JavaPeer.tagged('redisson_lock_token', name);
      const owner = `${redisson.id}:1`;
      expect(await peer.tryLockOnce(name, 1)).toBeNull();
      expect(await topology.redis.exists(counter)).toBe(0);
      expect(await peer.unlock(name, 1)).toBe(1);

      const rlock = new RLockProtocol();
      expect(await rlock.acquire(topology.redis, name, owner, 30_000)).toMatchObject({ holds: 1, fence: 1 });
      // Another process, with its own protocol object, reads the holder's fence from Redis.
      expect(await new RLockProtocol().inspect(topology.redis, name)).toMatchObject({ owner, fence: 1 });
      await rlock.release(topology.redis, name, owner, '30000');
      expect(await peer.tryLockAndGetToken(name, 1)).toBe(2);
      await peer.unlock(name, 1);
      const fair = new FairLockProtocol();
      expect(await fair.acquire(topology.redis, name, owner, 30_000)).toMatchObject({ holds: 1, fence: 3 });
      await fair.release(topology.redis, name, owner, '30000');
      expect(await redisson.getFencedLock(name).getToken()).toBe(3);
    });
  });
}
