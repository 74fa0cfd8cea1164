import { createLocker, keySlot, type LockLostError } from '@lock/core';
import { startCluster, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

const EPOCH = 2 ** 32;

it('a cluster failover of the lock’s shard: the slot’s counter moves to the next epoch and its unconfirmed holds end (failover)', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 1 });
  const locker = createLocker({ redis: cluster.client() });
  // One hash tag: every lock here shares a slot, so a fence counter and a shard.
  const held = await locker.acquire('{shard}:a', { ttl: 60_000 });
  const slot = keySlot('lock:{shard}:a');
  const index = cluster.slotRanges.findIndex((range) => slot >= range.start && slot <= range.end);
  const replica = cluster.replicas[index]!;
  const admin = replica.client();
  // A coordinated failover: the replica catches up with its master before taking over.
  await admin.call('CLUSTER', 'FAILOVER');
  await waitFor('the replica to take over', async () =>
    (await admin.info('replication')).includes('role:master'),
  );
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
