import { InvalidKeyError, InvalidOptionError } from '@lock/core';
import { type RedisCluster, startCluster } from '@lock/testing';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson } from '../src/index.js';
import {
  attemptLatches,
  fairQueue,
  fairTimeouts,
  fenceCounter,
  lockChannel,
  readFenceKey,
  readKeyPrefix,
  readTimeoutPrefix,
  rwChannel,
  unlockLatch,
} from '../src/names.js';
import { describeInterop } from './interop/suite.js';
import { threeMasterCluster } from './interop/topology.js';

describeInterop('3-master cluster, sharded pub/sub', threeMasterCluster);

describe('on a cluster', () => {
  let cluster: RedisCluster;
  let redis: Cluster;
  let redisson: Redisson;

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    redis = cluster.client();
    redisson = createRedisson({ redis });
  });
  afterAll(async () => {
    await redisson.shutdown();
    await cluster.stop();
  });

  it('refuses names with "{" but no usable hash tag before writing, and accepts tagged names', async () => {
    for (const bad of ['a{}b', 'x{y', 'open{']) {
      expect(() => redisson.getLock(bad)).toThrow(InvalidKeyError);
      expect(() => redisson.getReadWriteLock(bad)).toThrow(InvalidKeyError);
      expect(() => redisson.getFairLock(bad)).toThrow(/hash tag/);
    }
    const tagged = redisson.getFairLock('{orders}:42');
    await tagged.lock({ threadId: 1 });
    expect(Object.entries(await redis.hgetall('{orders}:42'))).toEqual([
      [expect.stringMatching(new RegExp(`^${redisson.id}:\\d+$`)), '1'],
    ]);
    await tagged.unlock({ threadId: 1 });
    expect(await tagged.isLocked()).toBe(false);
  });

  it('refuses names with "}" but no "{" before writing: the braces Redisson adds would end their tag early', async () => {
    const dbsize = async () => {
      let keys = 0;
      for (const node of redis.nodes('master')) keys += await node.dbsize();
      return keys;
    };
    const before = await dbsize();
    const prefixed = createRedisson({ redis, prefix: 'app}' });
    const factories: [string, (name: string) => unknown][] = [
      ['getLock', (name) => redisson.getLock(name)],
      ['getFairLock', (name) => redisson.getFairLock(name)],
      ['getFencedLock', (name) => redisson.getFencedLock(name)],
      ['getReadWriteLock', (name) => redisson.getReadWriteLock(name)],
      // The check is on the name as locked, after the prefix.
      ['getLock with prefix "app}"', (name) => prefixed.getLock(name.replace('}', ''))],
    ];
    for (const bad of ['orders}42', '}x', 'a}b}c']) {
      for (const [factory, make] of factories) {
        const error = (() => {
          try {
            make(bad);
            return null;
          } catch (e) {
            return e;
          }
        })();
        expect(error, `${factory}(${bad})`).toBeInstanceOf(InvalidKeyError);
        expect((error as Error).message).toMatch(/containing "}" needs a non-empty \{hash tag\}/);
      }
    }
    expect(() => redisson.getLock('orders}42')).toThrow(expect.objectContaining({ key: 'orders}42' }));
    expect(await dbsize()).toBe(before);
    await prefixed.shutdown();
  });

  it('refuses a Cluster with keyPrefix, at the top level or under redisOptions, and a replication object', async () => {
    const dbsize = async () => {
      let keys = 0;
      for (const node of redis.nodes('master')) keys += await node.dbsize();
      return keys;
    };
    const before = await dbsize();
    const cases: [client: Cluster, option: string][] = [
      [cluster.client({ keyPrefix: 'app:', lazyConnect: true }), 'redis.options.keyPrefix'],
      // ioredis copies redisOptions.keyPrefix to the top level; either place is refused.
      [cluster.client({ redisOptions: { keyPrefix: 'app:' }, lazyConnect: true }), 'redis.options.keyPrefix'],
    ];
    for (const [client, option] of cases) {
      const error = (() => {
        try {
          createRedisson({ redis: client });
          return null;
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option, value: 'app:' });
      expect((error as Error).message).toMatch(/`prefix` option/);
    }
    expect(() => createRedisson({ redis, replication: { replicas: 1, timeout: 100 } })).toThrow(
      /replication.*on a cluster/,
    );
    expect(await dbsize()).toBe(before);
  });

  it('keeps every key and channel of a lock in its slot and unlocks with SPUBLISH', async () => {
    const name = 'orders:42';
    const slot = async (key: string) => (await redis.call('CLUSTER', 'KEYSLOT', key)) as number;
    const lockSlot = await slot(name);
    // The names as the library builds them (a holder's owner is `<client id>:<thread>`).
    const owner = `${redisson.id}:1`;
    const built = {
      lockChannel: lockChannel(name),
      fairWaiterChannel: `${lockChannel(name)}:${owner}`,
      rwChannel: rwChannel(name),
      unlockLatch: unlockLatch(name, '00'),
      attemptLatches: attemptLatches(name, owner),
      fairQueue: fairQueue(name),
      fairTimeouts: fairTimeouts(name),
      fenceCounter: fenceCounter(name),
      readTimeout: `${readTimeoutPrefix(name, owner)}:1`,
      readFence: readFenceKey(name, owner),
      readTimeoutOfAnyHolder: `${readKeyPrefix(name)}:${owner}:rwlock_timeout:1`,
    };
    for (const [what, key] of Object.entries(built))
      expect(await slot(key), `${what}: ${key}`).toBe(lockSlot);

    // And the keys and channels a fair lock and a read-write lock really create, found by
    // scanning the masters: every one of them in the lock key's slot.
    const masters = redis.nodes('master');
    const keys = async () => {
      const found = new Set<string>();
      for (const node of masters) {
        let cursor = '0';
        do {
          const [next, batch] = await node.scan(cursor, 'COUNT', 1_000);
          cursor = next;
          for (const key of batch) found.add(key);
        } while (cursor !== '0');
      }
      return found;
    };
    const channels = async () => {
      const found = new Set<string>();
      for (const node of masters) {
        for (const kind of ['SHARDCHANNELS', 'CHANNELS'])
          for (const channel of (await node.call('PUBSUB', kind)) as string[]) found.add(channel);
      }
      return found;
    };
    const existing = await keys();
    const seen = new Map<string, 'key' | 'channel'>();
    const collect = async () => {
      for (const key of await keys()) if (!existing.has(key)) seen.set(key, 'key');
      for (const channel of await channels()) seen.set(channel, 'channel');
    };

    const fair = redisson.getFairLock(name);
    await fair.lock({ threadId: 1 });
    const fairWaiter = fair.tryLock({ threadId: 2, wait: 20_000 });
    // Awaited below; this keeps an early failure of the test from leaving it unhandled.
    fairWaiter.catch(() => {});
    await expect.poll(() => redis.llen(fairQueue(name)), { timeout: 10_000 }).toBe(1);
    await collect();
    await fair.unlock({ threadId: 1 });
    expect(await fairWaiter).toBe(true);
    await collect();
    await fair.unlock({ threadId: 2 });
    await collect();

    const rw = redisson.getReadWriteLock(name);
    await rw.readLock().lock({ threadId: 1 });
    const writer = rw.writeLock().tryLock({ threadId: 2, wait: 20_000 });
    writer.catch(() => {});
    await expect.poll(async () => (await channels()).has(rwChannel(name)), { timeout: 10_000 }).toBe(true);
    await collect();
    await rw.readLock().unlock({ threadId: 1 });
    expect(await writer).toBe(true);
    await collect();
    await rw.writeLock().unlock({ threadId: 2 });
    await collect();

    // Not an empty sample: the lock key, the fair queue and timeouts, a reader's timeout key,
    // the fair waiter's channel and the read-write channel were all seen.
    expect([...seen.keys()]).toEqual(
      expect.arrayContaining([
        name,
        fairQueue(name),
        fairTimeouts(name),
        `${readTimeoutPrefix(name, owner)}:1`,
        `${lockChannel(name)}:${redisson.id}:2`,
        rwChannel(name),
      ]),
    );
    const outOfSlot: string[] = [];
    for (const [found, kind] of seen)
      if ((await slot(found)) !== lockSlot) outOfSlot.push(`${kind} ${found}`);
    expect(outOfSlot).toEqual([]);

    const listener = cluster.client({ shardedSubscribers: true });
    const messages: string[][] = [];
    listener.on('smessage', (channel: string, message: string) => messages.push([channel, message]));
    await listener.ssubscribe(lockChannel(name));
    const lock = redisson.getLock(name);
    await lock.lock({ threadId: 1 });
    expect(await redis.pttl(name)).toBeGreaterThan(29_000);
    await lock.unlock({ threadId: 1 });
    // An SSUBSCRIBE client sees only SPUBLISH; PUBLISH would not reach it.
    await expect.poll(() => messages, { timeout: 5_000 }).toEqual([[lockChannel(name), '0']]);
    listener.disconnect();
  });
});
