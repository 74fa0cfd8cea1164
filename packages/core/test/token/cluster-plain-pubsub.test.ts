import { createLocker, pubSubMode } from '@lock/core';
import { type RedisCluster, startCluster, waitFor } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';
import { SLOW_POLL } from '../support/waiter-queue.js';

/**
 * A cluster as Redis 6 serves one (the seed's PHP fleet runs 6.2): no sharded pub/sub commands
 * (each `--rename-command` after the first rides in the value, as the flags are split on
 * spaces), and `PUBSUB SHARDNUMSUB` refused, which a rename cannot do to a subcommand alone.
 */
const REDIS_6 = {
  'rename-command': 'SPUBLISH "" --rename-command SSUBSCRIBE "" --rename-command SUNSUBSCRIBE ""',
};

async function redis6Cluster(): Promise<RedisCluster> {
  const cluster = await startCluster({ masters: 3, replicasPerMaster: 0, server: { config: REDIS_6 } });
  for (const master of cluster.masters)
    await master.client().call('ACL', 'SETUSER', 'default', '-pubsub|shardnumsub');
  return cluster;
}

describeLockerContract('token protocol on a 3-master cluster without sharded pub/sub (Redis 6)', async () => {
  const cluster = await redis6Cluster();
  const redis = cluster.client();
  return lockerTarget({
    create: (overrides) => createLocker({ redis, ...overrides }),
    clients: [redis],
    stop: () => cluster.stop(),
  });
});

describe('a cluster without sharded pub/sub (Redis 6)', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await redis6Cluster();
  }, 60_000);
  afterAll(() => cluster.stop());

  it('is found by the probe, and a release reaches a waiter that only a message can wake in time', async () => {
    const redis = cluster.client();
    expect(await pubSubMode(redis)).toBe('plain');
    const holder = createLocker({ redis });
    // Polls once a minute: within its wait only the release's message can hand it the lock.
    const waiter = createLocker({ redis: cluster.client(), retry: SLOW_POLL });
    const lock = await holder.acquire('six', { ttl: 60_000 });
    const waiting = waiter.acquire('six', { wait: 20_000 });
    await waitFor('the waiter to be queued', async () => (await redis.zcard('{lock:six}:queue')) === 1);
    expect(await lock.release()).toBe('released');
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(lock.fence);
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  }, 60_000);

  it('a legacy release (the ThinkPHP name) publishes plain and succeeds', async () => {
    const redis = cluster.client();
    const locker = createLocker({ redis, protocol: 'legacy', prefix: '' });
    const lock = await locker.acquire('{lock_goods}:300', { ttl: 5_000 });
    expect(await lock.release()).toBe('released');
    expect(await redis.exists('{lock_goods}:300')).toBe(0);
    await locker.close();
  }, 60_000);
});
