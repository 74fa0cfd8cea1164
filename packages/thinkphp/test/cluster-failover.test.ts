import type { LockLostError } from '@lock/core';
import { startCluster, waitFor } from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import { expect, it } from 'vitest';

// Default mode on a Redis Cluster, where core does no WAIT gating: a hold is unconfirmed, so
// its shard's failover ends it as 'failover' (core's "Failover awareness"), though the
// coordinated failover carried its key. The slot's fence counter moves to the next epoch; a
// lock whose slot stayed on its master is untouched, its fences in the same epoch.

const EPOCH = 2 ** 32;
const MOVED_KEY = '{lock_goods}:300';
const STAYING_KEYS = ['{lock_orders}:1', '{lock_users}:1', '{lock_carts}:1'];

it('a shard failover ends the unconfirmed hold there (failover), fences in its slot go on above, a lock on another master is unaffected', async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 1 });
  const redis = cluster.client();
  const masterOf = async (key: string) => {
    const slot = Number(await redis.cluster('KEYSLOT', key));
    return cluster.slotRanges.find((range) => range.start <= slot && slot <= range.end)!.master;
  };
  const movedMaster = await masterOf(MOVED_KEY);
  let stayingKey: string | undefined;
  for (const key of STAYING_KEYS) if ((await masterOf(key)) !== movedMaster) stayingKey ??= key;
  expect(stayingKey).toBeDefined();

  const fences: number[] = [];
  const earlier = new Lock(MOVED_KEY, { redis, expire: 30 });
  expect(await earlier.lock()).toBe(true);
  fences.push(earlier.handle!.fence);
  await earlier.unlock();
  const holder = new Lock(MOVED_KEY, { redis, expire: 30 });
  expect(await holder.lock()).toBe(true);
  fences.push(holder.handle!.fence);
  const bystander = new Lock(stayingKey!, { redis, expire: 30 });
  expect(await bystander.lock()).toBe(true);
  const bystanderFence = bystander.handle!.fence;

  const { promoted } = await cluster.failover({ key: MOVED_KEY });
  // A second Lock object meets the demoted master's MOVED, which makes the client read the
  // slots again and stamp the counter on the promoted one; the carried key refuses it.
  const second = new Lock(MOVED_KEY, { redis, expire: 30, retryMax: 1 });
  await waitFor('the hold to end', async () => {
    expect(await second.lock()).toBe(false);
    return holder.handle!.signal.aborted;
  });
  expect((holder.handle!.signal.reason as LockLostError).reason).toBe('failover');
  expect(await promoted.client().exists(MOVED_KEY)).toBe(1);

  // Another key in the failed-over slot (same hash tag, same counter): in the next epoch.
  const sameSlot = new Lock('{lock_goods}:301', { redis, expire: 30 });
  expect(await sameSlot.lock()).toBe(true);
  expect(sameSlot.handle!.fence).toBeGreaterThan(EPOCH);
  expect(sameSlot.handle!.fence).toBeGreaterThan(Math.max(...fences));
  fences.push(sameSlot.handle!.fence);
  await sameSlot.unlock();

  expect(bystander.handle!.signal.aborted).toBe(false);
  await bystander.unlock();
  expect(await redis.exists(stayingKey!)).toBe(0);
  const next = new Lock(stayingKey!, { redis, expire: 30 });
  expect(await next.lock()).toBe(true);
  expect(next.handle!.fence).toBeGreaterThan(bystanderFence);
  expect(next.handle!.fence).toBeLessThan(EPOCH);
  await next.unlock();

  // The lost hold's value is still on the promoted master: unlock() must delete it (README: it
  // deletes this lock's own value at once, and never drops a hold that may still be in Redis),
  // or the key stays for its whole lease, 31 s, refusing Node and PHP alike.
  await holder.unlock();
  expect(holder.handle).toBeNull();
  expect(await redis.exists(MOVED_KEY)).toBe(0);
  expect(await second.lock()).toBe(true);
  expect(second.handle!.fence).toBeGreaterThan(Math.max(...fences));
  await second.unlock();
});
