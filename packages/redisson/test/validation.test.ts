import { InvalidKeyError, InvalidOptionError, newChain } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson, type RedissonOptions } from '../src/index.js';
import { JavaPeer } from './peer/java-peer.js';

/** What a refused call threw, or null when it did not throw. */
function thrown(call: () => unknown): unknown {
  try {
    call();
    return null;
  } catch (error) {
    return error;
  }
}

describe('input checks and thread ranges', () => {
  let server: RedisServer;
  let redis: Redis;
  let redisson: Redisson;

  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
    redisson = createRedisson({ redis });
  });
  afterAll(async () => {
    await redisson.shutdown();
    await server.stop();
  });
  beforeEach(async () => {
    await redis.flushall();
  });

  describe('an ioredis client with keyPrefix (safety)', () => {
    it('createRedisson refuses a client with keyPrefix, naming it and pointing to `prefix`, before any write', async () => {
      const prefixed = server.client({ keyPrefix: 'app:' });
      const error = thrown(() => createRedisson({ redis: prefixed }));
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option: 'redis.options.keyPrefix', value: 'app:' });
      expect((error as Error).message).toMatch(/keyPrefix/);
      expect((error as Error).message).toMatch(/`prefix` option/);
      expect(await redis.dbsize()).toBe(0);
    });

    it('an empty keyPrefix prefixes nothing, and is accepted', async () => {
      const plain = createRedisson({ redis: server.client({ keyPrefix: '' }) });
      await plain.run(async () => {
        const lock = plain.getLock('plain:1');
        await lock.lock();
        expect(await redis.exists('plain:1')).toBe(1);
        await lock.unlock();
      });
      await plain.shutdown();
    });

    it('with `prefix` instead, a Java read unlock on the NameMapper-mapped name leaves the Node reader holding', async () => {
      const node = createRedisson({ redis, prefix: 'app:' });
      const java = new JavaPeer(server.client(), server.client());
      const rw = node.getReadWriteLock('orders:42');
      try {
        await node.run(async () => {
          await rw.readLock().lock();
          const [nodeField] = Object.keys(await redis.hgetall('app:orders:42')).filter((f) => f !== 'mode');
          expect(await java.readTryLock('app:orders:42', 1, 0)).toBe(true);
          expect(await java.readUnlock('app:orders:42', 1)).toBe(0);
          expect(await redis.hgetall('app:orders:42')).toEqual({ mode: 'read', [nodeField as string]: '1' });
          expect(await java.writeTryLock('app:orders:42', 7, 0)).toBe(false);
          expect(await rw.readLock().isHeldByCurrentThread()).toBe(true);
          await rw.readLock().unlock();
        });
        expect(await redis.exists('app:orders:42')).toBe(0);
      } finally {
        await node.shutdown();
      }
    });
  });

  describe('run() thread ids and explicit threadIds never meet (safety)', () => {
    it('no explicit threadId re-enters a hold taken inside run()', async () => {
      const lock = redisson.getLock('orders:run');
      let release!: () => void;
      const mayUnlock = new Promise<void>((resolve) => {
        release = resolve;
      });
      let held!: () => void;
      const holding = new Promise<void>((resolve) => {
        held = resolve;
      });
      const handler = redisson.run(async () => {
        await lock.lock();
        held();
        await mayUnlock;
        await lock.unlock();
      });
      await holding;
      const before = await redis.hgetall('orders:run');
      // Every chain core has numbered so far, this run's included, is at most `last`.
      const last = newChain();
      const taken: number[] = [];
      for (let threadId = 1; threadId <= last; threadId++) {
        if (await lock.tryLock({ threadId })) taken.push(threadId);
      }
      const after = await redis.hgetall('orders:run');
      release();
      await handler;
      expect(taken).toEqual([]);
      expect(Object.values(before)).toEqual(['1']);
      expect(after).toEqual(before);
      expect(await redis.exists('orders:run')).toBe(0);
    });

    it('refuses a threadId in the run() range, or not a positive safe integer, naming it, before any write', async () => {
      const lock = redisson.getLock('orders:ids');
      for (const threadId of [0, -1, 1.5, 2 ** 52, 2 ** 52 + 1, 2 ** 53, Number.NaN, Infinity, '1']) {
        const error = await lock.tryLock({ threadId: threadId as number }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(InvalidOptionError);
        expect(error).toMatchObject({ option: 'threadId', value: threadId });
        expect((error as Error).message).toContain(typeof threadId === 'string' ? '"1"' : String(threadId));
        expect((error as Error).message).toMatch(/below 2\^52/);
      }
      await expect(lock.isHeldByThread(2 ** 52 + 1)).rejects.toBeInstanceOf(InvalidOptionError);
      await expect(lock.unlock({ threadId: 2 ** 52 + 1 })).rejects.toBeInstanceOf(InvalidOptionError);
      expect(await redis.dbsize()).toBe(0);
    });

    it('the largest explicit id and a run() id are both owner fields Java reads as a long', async () => {
      const lock = redisson.getLock('orders:long');
      await lock.lock({ threadId: 2 ** 52 - 1 });
      expect(await redis.hgetall('orders:long')).toEqual({ [`${redisson.id}:4503599627370495`]: '1' });
      await lock.unlock({ threadId: 2 ** 52 - 1 });
      const field = await redisson.run(async () => {
        await lock.lock();
        const [owner] = Object.keys(await redis.hgetall('orders:long'));
        await lock.unlock();
        return owner as string;
      });
      const thread = BigInt(field.slice(redisson.id.length + 1));
      expect(thread).toBeGreaterThan(2n ** 52n);
      expect(thread).toBeLessThanOrEqual(2n ** 63n - 1n);
      expect(await redis.exists('orders:long')).toBe(0);
    });
  });

  describe('arguments that name a thread or start one', () => {
    it('isHeldByThread(undefined) is refused naming it, not answered for the current thread', async () => {
      const lock = redisson.getLock('orders:named');
      const answer = await redisson.run(async () => {
        await lock.lock();
        try {
          return await lock.isHeldByThread(undefined as unknown as number).catch((e: unknown) => e);
        } finally {
          await lock.unlock();
        }
      });
      expect(answer).toBeInstanceOf(InvalidOptionError);
      expect(answer).toMatchObject({ option: 'threadId', value: undefined });
      expect((answer as Error).message).toContain('undefined');
    });

    it('run() refuses anything but a function, naming the value, before it starts a thread', () => {
      for (const fn of [123, undefined, 'work', null]) {
        const error = thrown(() => redisson.run(fn as unknown as () => void));
        expect(error, String(fn)).toBeInstanceOf(InvalidOptionError);
        expect(error).toMatchObject({ option: 'fn', value: fn });
        expect((error as Error).message).toContain(typeof fn === 'string' ? '"work"' : String(fn));
      }
    });
  });

  describe('names and options are checked as given, before any write', () => {
    it('every lock factory refuses a name that is not a non-empty string, prefix or not, and writes nothing', async () => {
      // Another service's lock at the very keys a stringified name would hit.
      await redis.hset('undefined', 'other:1', '1');
      await redis.hset('app:undefined', 'other:1', '1');
      const prefixed = createRedisson({ redis, prefix: 'app:' });
      try {
        for (const client of [redisson, prefixed]) {
          const factories = {
            getLock: (name: string) => client.getLock(name),
            getFairLock: (name: string) => client.getFairLock(name),
            getFencedLock: (name: string) => client.getFencedLock(name),
            getReadWriteLock: (name: string) => client.getReadWriteLock(name),
          };
          for (const [factory, make] of Object.entries(factories)) {
            for (const name of [undefined, null, 42, {}, '', 'x'.repeat(4097)]) {
              const error = thrown(() => make(name as string));
              expect(error, `${factory}(${String(name).slice(0, 10)})`).toBeInstanceOf(InvalidKeyError);
              expect(error).toMatchObject({ key: name });
            }
          }
        }
      } finally {
        await prefixed.shutdown();
      }
      expect(await redis.dbsize()).toBe(2);
      expect(await redis.hgetall('undefined')).toEqual({ 'other:1': '1' });
      expect(await redis.hgetall('app:undefined')).toEqual({ 'other:1': '1' });
    });

    it('createRedisson refuses a bad prefix, retry or replication naming the value, before any write', async () => {
      // What `prefix: 42` + `getLock('x')` would have concatenated to, and force-unlocked.
      await redis.hset('42x', 'other:1', '1');
      const cases: [options: Record<string, unknown>, option: string, shown: string][] = [
        [{ prefix: 42 }, 'prefix', '42'],
        [{ prefix: null }, 'prefix', 'null'],
        [{ prefix: 'p'.repeat(257) }, 'prefix', '"ppp'],
        [{ retry: 'fast' }, 'retry', '"fast"'],
        [{ retry: { base: 0 } }, 'retry.base', '0'],
        [{ retry: { max: 2 ** 31 } }, 'retry.max', String(2 ** 31)],
        [{ retry: { base: 100, max: 50 } }, 'retry.max', '50'],
        [{ retry: { jitter: 2 } }, 'retry.jitter', '2'],
        // An unknown name is shown without its value (it may be a secret under a wrong name).
        [{ retry: { bse: 10 } }, 'retry.bse', 'unknown option "retry.bse"'],
        [{ replication: 42 }, 'replication', '42'],
        [{ replication: 'always' }, 'replication', '"always"'],
        [{ replication: true }, 'replication', 'true'],
        [{ replication: null }, 'replication', 'null'],
        [{ replication: { replicas: 0, timeout: 100 } }, 'replication.replicas', '0'],
        [{ replication: { replicas: 1 } }, 'replication.timeout', 'undefined'],
        [
          { replication: { replicas: 1, timeout: 10, timout: 5 } },
          'replication.timout',
          'unknown option "replication.timout"',
        ],
        [{ lockWatchdogTimeout: 9 }, 'lockWatchdogTimeout', '9'],
      ];
      for (const [options, option, shown] of cases) {
        const error = thrown(() => createRedisson({ redis, ...options } as RedissonOptions));
        expect(error, JSON.stringify(options).slice(0, 60)).toBeInstanceOf(InvalidOptionError);
        expect(error).toMatchObject({ option });
        expect((error as Error).message).toContain(shown);
      }
      const accepted: Partial<RedissonOptions>[] = [
        { prefix: '' },
        { prefix: 'app:' },
        { retry: {} },
        { retry: { base: 10, max: 20, jitter: 0 } },
        // The turn a fair waiter keeps is derived from these, and never longer than a TTL can be.
        { retry: { max: 2 ** 31 - 1 } },
        { commandTimeout: 2 ** 30 },
        { replication: 'auto' },
        { replication: false },
        { replication: { replicas: 1, timeout: 100 } },
      ];
      for (const options of accepted) await createRedisson({ redis, ...options }).shutdown();
      expect(await redis.dbsize()).toBe(1);
      expect(await redis.hgetall('42x')).toEqual({ 'other:1': '1' });
    });
  });
});
