import { ReplicationError } from '@lock/core';
import { type ProxiedClient, proxiedClient, type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRedisson, type Redisson, type RLock } from '../src/index.js';

async function replicaOf(master: RedisServer): Promise<RedisServer> {
  const replica = await startRedis({ config: { replicaof: `${master.host} ${master.port}` } });
  await waitFor('the replica to be in sync', async () =>
    (await replica.client().info('replication')).includes('master_link_status:up'),
  );
  return replica;
}

/** `WAIT` calls the master has answered so far (any client's). */
async function waits(): Promise<number> {
  const stats = await admin.info('commandstats');
  return Number(/cmdstat_wait:calls=(\d+)/.exec(stats)?.[1] ?? 0);
}

let master: RedisServer;
let admin: Redis;
let replica: RedisServer;
let proxied: ProxiedClient;
let redisson: Redisson;
beforeAll(async () => {
  master = await startRedis();
  replica = await replicaOf(master);
  admin = master.client();
  proxied = await proxiedClient(master);
  redisson = createRedisson({
    redis: proxied.redis,
    replication: { replicas: 1, timeout: 5_000 },
    // The replies are held below for as long as the test needs: no call may time out meanwhile.
    commandTimeout: 60_000,
  });
});
afterAll(async () => {
  await redisson?.shutdown();
  await proxied?.close();
  await replica?.stop();
  await master?.stop();
});

const kinds: [string, (name: string) => RLock][] = [
  ['RLock', (name) => redisson.getLock(name)],
  ['RFencedLock', (name) => redisson.getFencedLock(name)],
  ['RFairLock', (name) => redisson.getFairLock(name)],
  ['read lock', (name) => redisson.getReadWriteLock(name).readLock()],
  ['write lock', (name) => redisson.getReadWriteLock(name).writeLock()],
];

/** One WAIT per acquisition, sent on the grant's answer: none behind an attempt refused. */
it.each(kinds)('%s: one WAIT confirms an acquisition', async (kind, lockOf) => {
  const lock = lockOf(`wait-${kind}`);
  const before = await waits();
  await lock.lock({ threadId: 1, lease: 10_000 });
  expect(await waits()).toBe(before + 1);
  expect(await lock.isHeldByThread(1)).toBe(true);
  await lock.unlock({ threadId: 1 });
});

/**
 * A grant answered on a new connection (the first closed before the answer; ioredis sent the
 * script again) cannot be confirmed: a WAIT there would count the fresh connection's writes, not
 * the grant's. It is undone and the acquisition fails with ReplicationError.
 */
it.each(kinds)('%s: a grant answered after a reconnect is not confirmed', async (kind, lockOf) => {
  const lock = lockOf(`reconnect-${kind}`);
  // Loads the scripts and runs the per-lock checks, so the next acquisition sends the script first.
  await lock.lock({ threadId: 1, lease: 10_000 });
  await lock.unlock({ threadId: 1 });
  // The script reaches the master; the connection is reset before its answer comes back.
  proxied.proxy.resetAfter(0, 'downstream', 1);
  await expect(lock.lock({ threadId: 1, lease: 10_000 })).rejects.toBeInstanceOf(ReplicationError);
  expect(await lock.isHeldByThread(1)).toBe(false);
});
