import { createLocker, InvalidOptionError, pubSubMode } from '@lock/core';
import { type RedisCluster, startCluster, waitFor } from '@lock/testing';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson, RLockProtocol } from '../src/index.js';
import { JavaPeer } from './peer/java-peer.js';

/**
 * Polls once a minute. Every wait below is 20 s under a 30 s lease, so neither side's waiter can
 * take the lock in time but by the unlock's message.
 */
const SLOW_POLL = { base: 60_000, max: 60_000, jitter: 0 };

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
}, 60_000);
afterAll(() => cluster.stop());

/** Keys on every master: the refusals below must write none. */
async function keysIn(): Promise<number> {
  let keys = 0;
  for (const master of cluster.masters) {
    const admin = master.client();
    keys += await admin.dbsize();
    admin.disconnect();
  }
  return keys;
}

describe("createRedisson's pubSub", () => {
  it("refuses a value that is not a mode, and Redisson's own setting name, before anything is written or forced", async () => {
    const redis = cluster.client();
    const before = await keysIn();
    expect(() => createRedisson({ redis, pubSub: 'OFF' as never })).toThrow(
      `invalid option "pubSub": "OFF" (expected 'auto', 'sharded' or 'plain')`,
    );
    expect(() => createRedisson({ redis, shardedSubscriptionMode: 'OFF' } as never)).toThrow(
      `unknown option "shardedSubscriptionMode" (expected one of the createRedisson() options: redis, prefix, lockWatchdogTimeout, fairLockWaitTimeout, replication, retry, commandTimeout, pubSub; shardedSubscriptionMode AUTO, ON, OFF is pubSub 'auto', 'sharded', 'plain'). Did you mean "pubSub"?`,
    );
    expect(() => createRedisson({ redis, pubSub: 'plain', prefix: 7 as never })).toThrow(InvalidOptionError);
    expect(await keysIn()).toBe(before);
    // None of the refused clients forced a mode: the client is still probed.
    expect(await pubSubMode(redis)).toBe('sharded');
  });

  it('is refused when a locker forced the other mode on the client, either way round; auto follows', async () => {
    const shared = cluster.client();
    const locker = createLocker({
      redis: shared,
      protocol: new RLockProtocol(),
      prefix: '',
      pubSub: 'sharded',
    });
    expect(() => createRedisson({ redis: shared, pubSub: 'plain' })).toThrow(
      `invalid option "pubSub": "plain" (expected 'sharded' or 'auto': another locker forced 'sharded' on this client`,
    );
    const follower = createRedisson({ redis: shared });
    expect(pubSubMode(shared)).toBe('sharded');

    const other = cluster.client();
    const redisson = createRedisson({ redis: other, pubSub: 'plain' });
    expect(() => createLocker({ redis: other, pubSub: 'sharded' })).toThrow(
      `invalid option "pubSub": "sharded" (expected 'plain' or 'auto': another locker forced 'plain' on this client`,
    );
    expect(pubSubMode(other)).toBe('plain');
    await Promise.all([locker.close(), follower.shutdown(), redisson.shutdown()]);
  });
});

describe("pubSub: 'plain' on a Redis 7 cluster, beside a Java peer on Redisson before 3.22 (PUBLISH / SUBSCRIBE)", () => {
  let redis: Cluster;
  let redisson: Redisson;
  let peer: JavaPeer;
  beforeAll(() => {
    redis = cluster.client();
    redisson = createRedisson({ redis, pubSub: 'plain', retry: SLOW_POLL });
    peer = new JavaPeer(cluster.client(), cluster.client(), false);
  });
  afterAll(() => redisson.shutdown());

  /** Plain subscribers of `channel`, over every master. */
  async function plainSubscribers(channel: string): Promise<number> {
    let count = 0;
    for (const master of cluster.masters) {
      const admin = master.client();
      const [, n] = (await admin.pubsub('NUMSUB', channel)) as [string, number];
      admin.disconnect();
      count += n;
    }
    return count;
  }

  it('our waiter subscribes plain and is woken by the peer unlock published with PUBLISH', async () => {
    const name = 'old-java:holds';
    const channel = JavaPeer.tagged('redisson_lock__channel', name);
    expect(await peer.tryLockOnce(name, 1)).toBeNull();
    const lock = redisson.getLock(name);
    const acquired = lock.tryLock({ threadId: 1, wait: 20_000 });
    await waitFor('our plain subscription', async () => (await plainSubscribers(channel)) === 1, {
      timeout: 10_000,
    });
    expect(await peer.unlock(name, 1)).toBe(1);
    expect(await acquired).toBe(true);
    await lock.unlock({ threadId: 1 });
  }, 60_000);

  it('a peer waiter subscribed with SUBSCRIBE is woken by our unlock', async () => {
    const name = 'old-java:waits';
    const channel = JavaPeer.tagged('redisson_lock__channel', name);
    const lock = redisson.getLock(name);
    await lock.lock({ threadId: 1 });
    const acquired = peer.tryLock(name, 1, 20_000);
    await waitFor('the peer subscribed', async () => peer.subscribedTo(channel), { timeout: 10_000 });
    await lock.unlock({ threadId: 1 });
    expect(await acquired).toBe(true);
    expect(peer.wakeups).toContainEqual(expect.objectContaining({ channel, message: '0' }));
    await peer.unlock(name, 1);
  }, 60_000);
});
