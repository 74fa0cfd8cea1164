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

/**
 * The WAIT confirming an acquisition must be written right behind the acquire script on the same
 * connection: sent only on the script's answer, a reconnect in between would have it count the
 * fresh connection's offset (nothing to wait for) and confirm a write no replica has. With the
 * master's replies held back, the master runs the WAIT only if the client wrote it without
 * waiting for the script's answer.
 */
it.each<[string, (name: string) => RLock]>([
  ['RLock', (name) => redisson.getLock(name)],
  ['RFencedLock', (name) => redisson.getFencedLock(name)],
  ['RFairLock', (name) => redisson.getFairLock(name)],
  ['read lock', (name) => redisson.getReadWriteLock(name).readLock()],
  ['write lock', (name) => redisson.getReadWriteLock(name).writeLock()],
])(
  '%s: the WAIT goes out behind the acquire script, before its answer',
  async (kind, lockOf) => {
    const lock = lockOf(`wait-${kind}`);
    // Loads the scripts and runs the per-lock checks, so the next acquisition sends the script first.
    await lock.lock({ threadId: 1, lease: 10_000 });
    await lock.unlock({ threadId: 1 });
    const before = await waits();
    proxied.proxy.delay({ downstream: 60_000 });
    const locking = lock.lock({ threadId: 1, lease: 10_000 });
    try {
      await waitFor(
        'the master to run a WAIT while the script’s answer is held',
        async () => {
          return (await waits()) > before;
        },
        { timeout: 3_000 },
      );
    } finally {
      proxied.proxy.pass();
      await locking;
    }
    expect(await waits()).toBe(before + 1);
    expect(await lock.isHeldByThread(1)).toBe(true);
    await lock.unlock({ threadId: 1 });
  },
  30_000,
);
