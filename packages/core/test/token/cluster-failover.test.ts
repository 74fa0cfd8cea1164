import { createLocker, type LockLostError } from '@lock/core';
import { startCluster, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { countScripts } from '../support/waiter-queue.js';

const EPOCH = 2 ** 32;

it('a cluster failover of the lock’s shard: the slot’s counter moves to the next epoch and its unconfirmed holds end (failover)', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 1 });
  const locker = createLocker({ redis: cluster.client() });
  // One hash tag: every lock here shares a slot, so a fence counter and a shard.
  const held = await locker.acquire('{shard}:a', { ttl: 60_000 });
  await cluster.failover({ key: 'lock:{shard}:a' });
  // The client notices through a slot refresh (a MOVED answer, a node change); the next
  // acquisition after it stamps the counter on the new master. Each probe is released at once.
  await waitFor(
    'an acquisition stamped on the new master',
    async () => {
      const next = await locker.acquire('{shard}:c', { ttl: 60_000, wait: 0 });
      await next.release();
      return held.signal.aborted;
    },
    { timeout: 10_000, interval: 100 },
  );
  expect((held.signal.reason as LockLostError).reason).toBe('failover');
  const after = await locker.acquire('{shard}:d', { ttl: 60_000 });
  expect(after.fence).toBeGreaterThan(EPOCH);
  await locker.close();
});

it('a renewed hold learns of its shard’s failover from the slot refresh its renewal causes, with no acquisition in the slot', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 1 });
  // Renewed every second: the first renewal after the failover meets the new master (MOVED),
  // and the client reads the slots again. The key was replicated, so the renewal itself succeeds.
  const locker = createLocker({ redis: cluster.client(), ttl: 3_000 });
  const held = await locker.acquire('{shard}:a');
  await cluster.failover({ key: 'lock:{shard}:a' });
  await waitFor('the hold to end', async () => held.signal.aborted, { timeout: 10_000, interval: 50 });
  expect((held.signal.reason as LockLostError).reason).toBe('failover');
  await locker.close();
});

it('a slot refresh that routes no counter to another master stamps nothing at once', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  const client = cluster.client();
  const locker = createLocker({ redis: client });
  const held = await locker.acquire('{shard}:a', { ttl: 60_000 });
  const scripts = countScripts(client as never);
  // What `slotsRefreshInterval` or a MOVED for another slot does: the slots read again, unchanged.
  const refreshed = new Promise((resolve) => client.once('refresh', resolve));
  (client as unknown as { refreshSlotsCache(): void }).refreshSlotsCache();
  await refreshed;
  // Sent behind any stamp the refresh made.
  expect(await locker.isLocked('{shard}:a')).toBe(true);
  expect(scripts()).toBe(1);
  expect(held.signal.aborted).toBe(false);
  await locker.close();
});

it('a master restarted empty at the same address, seen only through slot refreshes: fences go on above the ones drawn before', async () => {
  await using cluster = await startCluster({ masters: 1, replicasPerMaster: 0 });
  // Reconnecting to a node it lost, ioredis then reports no node change: only refreshes.
  const client = cluster.client({ clusterNodeRetryStrategy: () => 50, slotsRefreshInterval: 200 });
  client.on('error', () => {});
  const locker = createLocker({ redis: client });
  const before = await locker.acquire('k', { ttl: 30_000 });
  await before.release();
  await cluster.masters[0]!.restart();
  await waitFor(
    'the client to reach the restarted master',
    async () => (await client.ping().catch(() => '')) === 'PONG',
  );
  await new Promise((resolve) => client.once('refresh', resolve));
  const after = await locker.acquire('k', { ttl: 30_000 });
  expect(after.fence).toBeGreaterThan(before.fence);
  expect(after.fence).toBeGreaterThan(EPOCH);
  await after.release();
  await locker.close();
});
