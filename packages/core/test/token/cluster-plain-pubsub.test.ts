import { createLocker, pubSubMode, ReleaseListener } from '@lock/core';
import { type RedisCluster, startCluster, waitFor } from '@lock/testing';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';
import { SLOW_POLL } from '../support/waiter-queue.js';

/**
 * A cluster as Redis 6 serves one (the seed's PHP fleet runs 6.2): no sharded pub/sub commands
 * (each `--rename-command` after the first rides in the value, as the flags are split on
 * spaces).
 */
const REDIS_6 = {
  'rename-command': 'SPUBLISH "" --rename-command SSUBSCRIBE "" --rename-command SUNSUBSCRIBE ""',
};

async function redis6Cluster(): Promise<RedisCluster> {
  return startCluster({ masters: 3, replicasPerMaster: 0, server: { config: REDIS_6 } });
}

/**
 * A client of it whose probe gets Redis 6's answer: a rename cannot take one subcommand away, and
 * `PUBSUB SHARDNUMSUB` is the only command of Redis 7 the servers above still have that the
 * locker asks for.
 */
function redis6Client(cluster: RedisCluster): Cluster {
  const client = cluster.client();
  const call = client.call.bind(client) as (...args: unknown[]) => Promise<unknown>;
  client.call = ((...args: unknown[]) =>
    args[0] === 'PUBSUB' && args[1] === 'SHARDNUMSUB'
      ? Promise.reject(new Error("ERR unknown subcommand 'SHARDNUMSUB'. Try PUBSUB HELP."))
      : call(...args)) as typeof client.call;
  return client;
}

describeLockerContract('token protocol on a 3-master cluster without sharded pub/sub (Redis 6)', async () => {
  const cluster = await redis6Cluster();
  const redis = redis6Client(cluster);
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
    const redis = redis6Client(cluster);
    expect(await pubSubMode(redis)).toBe('plain');
    const holder = createLocker({ redis });
    // Polls once a minute: within its wait only the release's message can hand it the lock.
    const waiter = createLocker({ redis: redis6Client(cluster), retry: SLOW_POLL });
    const lock = await holder.acquire('six', { ttl: 60_000 });
    const waiting = waiter.acquire('six', { wait: 20_000 });
    await waitFor('the waiter to be queued', async () => (await redis.zcard('{lock:six}:queue')) === 1);
    expect(await lock.release()).toBe('released');
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(lock.fence);
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  }, 60_000);

  it('keeps no answer but a definite one: after CLUSTERDOWN it asks again', async () => {
    const client = cluster.client();
    const call = client.call.bind(client) as (...args: unknown[]) => Promise<unknown>;
    let probes = 0;
    client.call = ((...args: unknown[]) => {
      if (args[0] !== 'PUBSUB') return call(...args);
      probes += 1;
      return probes === 1 ? Promise.reject(new Error('CLUSTERDOWN The cluster is down')) : call(...args);
    }) as typeof client.call;
    await expect(pubSubMode(client)).rejects.toThrow('CLUSTERDOWN');
    // The servers still have PUBSUB SHARDNUMSUB: only their sharded commands were renamed away.
    expect(await pubSubMode(client)).toBe('sharded');
    expect(probes).toBe(2);
    client.disconnect();
  });

  it('a release listener closed while its probe is out makes no subscriber connection', async () => {
    const listener = new ReleaseListener(redis6Client(cluster));
    const listening = listener.listen('{six}:released', () => {});
    await listener.close();
    await expect(listening).rejects.toThrow('release listener is closed');
  });

  it('a legacy release (the ThinkPHP name) publishes plain and succeeds', async () => {
    const redis = redis6Client(cluster);
    const locker = createLocker({ redis, protocol: 'legacy', prefix: '' });
    const lock = await locker.acquire('{lock_goods}:300', { ttl: 5_000 });
    expect(await lock.release()).toBe('released');
    expect(await redis.exists('{lock_goods}:300')).toBe(0);
    await locker.close();
  }, 60_000);
});

it('on a Redis 7 cluster, a user the ACL refuses the probe publishes sharded: its release with a waiter queued succeeds', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  // As the README's ACL list had it before the probe: the sharded commands only, not PUBSUB.
  const refused = ['-pubsub|shardnumsub', '-publish', '-subscribe', '-unsubscribe'];
  for (const master of cluster.masters) await master.client().call('ACL', 'SETUSER', 'default', ...refused);
  const redis = cluster.client();
  expect(await pubSubMode(redis)).toBe('sharded');
  const holder = createLocker({ redis });
  const waiter = createLocker({ redis: cluster.client(), retry: SLOW_POLL });
  const lock = await holder.acquire('seven', { ttl: 60_000 });
  const waiting = waiter.acquire('seven', { wait: 20_000 });
  await waitFor('the waiter to be queued', async () => (await redis.zcard('{lock:seven}:queue')) === 1);
  expect(await lock.release()).toBe('released');
  expect((await waiting).fence).toBeGreaterThan(lock.fence);
  await Promise.all([holder.close(), waiter.close()]);
}, 60_000);
