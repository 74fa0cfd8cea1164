import { InvalidKeyError, InvalidOptionError } from '@lock/core';
import { type RedisCluster, startCluster } from '@lock/testing';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson } from '../src/index.js';
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
    for (const key of [
      'redisson_lock__channel:{orders:42}',
      'redisson_unlock_latch:{orders:42}:00',
      'redisson_lock_queue:{orders:42}',
      'redisson_rwlock:{orders:42}',
      '{orders:42}:u:1:rwlock_timeout:1',
    ]) {
      expect(await slot(key)).toBe(11_414);
    }
    const listener = cluster.client({ shardedSubscribers: true });
    const messages: string[][] = [];
    listener.on('smessage', (channel: string, message: string) => messages.push([channel, message]));
    await listener.ssubscribe('redisson_lock__channel:{orders:42}');
    const lock = redisson.getLock(name);
    await lock.lock({ threadId: 1 });
    expect(await redis.pttl(name)).toBeGreaterThan(29_000);
    await lock.unlock({ threadId: 1 });
    // An SSUBSCRIBE client sees only SPUBLISH; PUBLISH would not reach it.
    await expect
      .poll(() => messages, { timeout: 5_000 })
      .toEqual([['redisson_lock__channel:{orders:42}', '0']]);
    listener.disconnect();
  });
});
