import { createLocker, keySlot, type LockLostError } from '@lock/core';
import { type RedisCluster, startCluster, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { countScripts } from '../support/waiter-queue.js';

const EPOCH = 2 ** 32;

/** Fails the shard of `key` over to its replica (coordinated: the replica catches up first). */
async function failOver(cluster: RedisCluster, key: string): Promise<void> {
  const slot = keySlot(key);
  const index = cluster.slotRanges.findIndex((range) => slot >= range.start && slot <= range.end);
  const admin = cluster.replicas[index]!.client();
  await admin.call('CLUSTER', 'FAILOVER');
  await waitFor('the replica to take over', async () =>
    (await admin.info('replication')).includes('role:master'),
  );
}

it('a cluster failover of the lock’s shard: the slot’s counter moves to the next epoch and its unconfirmed holds end (failover)', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 1 });
  const locker = createLocker({ redis: cluster.client() });
  // One hash tag: every lock here shares a slot, so a fence counter and a shard.
  const held = await locker.acquire('{shard}:a', { ttl: 60_000 });
  await failOver(cluster, 'lock:{shard}:a');
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
  await failOver(cluster, 'lock:{shard}:a');
  await waitFor('the hold to end', async () => held.signal.aborted, { timeout: 10_000, interval: 50 });
  expect((held.signal.reason as LockLostError).reason).toBe('failover');
  await locker.close();
});

it('a slot refresh that routes no counter to another master stamps nothing, then or at the next acquisition', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  const client = cluster.client();
  const locker = createLocker({ redis: client });
  const held = await locker.acquire('{shard}:a', { ttl: 60_000 });
  const scripts = countScripts(client as never);
  // What `slotsRefreshInterval` or a MOVED for another slot does: the slots read again, unchanged.
  const refreshed = new Promise((resolve) => client.once('refresh', resolve));
  (client as unknown as { refreshSlotsCache(): void }).refreshSlotsCache();
  await refreshed;
  const next = await locker.acquire('{shard}:b', { ttl: 60_000 });
  await next.release();
  // The acquisition and the release: no stamp before either.
  expect(scripts()).toBe(2);
  expect(held.signal.aborted).toBe(false);
  await locker.close();
});
