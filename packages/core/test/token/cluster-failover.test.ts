import { createLocker, type LockLostError } from '@lock/core';
import { startCluster, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { keySlot } from '../../src/hash-tag.js';
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

/** Whether the CLUSTER SLOTS of every node (a client each) gives `slot` the members (ports: master first) `test` accepts. */
async function everyNodeLists(
  nodes: readonly Redis[],
  slot: number,
  test: (ports: readonly number[]) => boolean,
): Promise<boolean> {
  for (const node of nodes) {
    const ranges = (await node.call('CLUSTER', 'SLOTS')) as [number, number, ...[string, number][]][];
    const range = ranges.find(([start, end]) => slot >= start && slot <= end);
    if (!range || !test(range.slice(2).map((member) => (member as [string, number])[1]))) return false;
  }
  return true;
}

for (const via of ['extend', 'renewal'] as const) {
  it(`${via === 'extend' ? 'an extend()' : 'a renewal'} refused by the shard's new master, reached by a MOVED before the slot refresh, ends the hold as failover, not taken`, async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 1 });
    const slot = keySlot('shard');
    const shard = cluster.slotRanges.findIndex(({ start, end }) => slot >= start && slot <= end);
    const [master, replica] = [cluster.masters[shard]!, cluster.replicas[shard]!];
    const nodes = cluster.nodes.map((node) => node.client());
    // Every node lists the replica in CLUSTER SLOTS once it has replicated something, as in any
    // running cluster: the client then keeps it among its nodes, and following the MOVED to it
    // is no node change (which would make a stamp due on its own).
    await master.client().set('{shard}:warm', '1');
    await waitFor('every node to list the replica', () =>
      everyNodeLists(nodes, slot, (ports) => ports.includes(replica.port)),
    );
    // No periodic slot refresh, and the one a MOVED starts read as slowly as on a loaded host: it
    // lands after the command the client sent on, as it mostly does anyway.
    const client = cluster.client({ slotsRefreshInterval: 0 });
    const internals = client as unknown as { getInfoFromNode(...args: unknown[]): void };
    if (typeof internals.getInfoFromNode !== 'function') {
      throw new Error('ioredis no longer reads slots with getInfoFromNode');
    }
    const readSlots = internals.getInfoFromNode.bind(client);
    internals.getInfoFromNode = (...args) => void setTimeout(() => readSlots(...args), 200);
    const locker = createLocker({ redis: client, ttl: via === 'extend' ? 60_000 : 1_500 });
    await (await locker.acquire('{shard}:warm-up')).release();
    // The hold never reaches the replica: paused writes hold back its master's stream, which the
    // takeover then drops.
    const promoted = replica.client();
    await promoted.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    const held = await locker.acquire('{shard}:a');
    await promoted.call('CLUSTER', 'FAILOVER', 'TAKEOVER');
    await promoted.call('CLIENT', 'UNPAUSE');
    await waitFor('every node to name the replica the slot’s master', () =>
      everyNodeLists(nodes, slot, (ports) => ports[0] === replica.port),
    );
    expect(await promoted.exists('lock:{shard}:a')).toBe(0);
    if (via === 'extend') await expect(held.extend()).rejects.toMatchObject({ reason: 'failover' });
    else await waitFor('the hold to end', async () => held.signal.aborted, { timeout: 5_000, interval: 10 });
    expect((held.signal.reason as LockLostError).reason).toBe('failover');
    await locker.close();
  });
}

it('an extend() refused where the slot has not moved is taken at once, with no master check sent for it', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  const client = cluster.client();
  const locker = createLocker({ redis: client });
  const held = await locker.acquire('{shard}:a', { ttl: 60_000 });
  await client.del('lock:{shard}:a');
  const other = createLocker({ redis: cluster.client() });
  await other.acquire('{shard}:a', { ttl: 60_000 });
  const scripts = countScripts(client as never);
  await expect(held.extend()).rejects.toMatchObject({ reason: 'taken' });
  expect(scripts()).toBe(1);
  await Promise.all([locker.close(), other.close()]);
});
