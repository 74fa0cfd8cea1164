import { type LostEvent, lockEvents, NotOwnerError } from '@lock/core';
import { type RedisCluster, type RedisServer, startCluster, waitFor } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waiterSubscribed } from '../../core/test/contract/keys.js';
import { createRedisson } from '../src/index.js';
import { expectHandedOver, fourKinds, NO_POLLING, waitOn } from './helpers/four-kinds.js';

/**
 * A slot's master changes under held locks and waiting calls: a shard failover (the replica
 * promoted) or a resharding (the slot migrated to another master), both keeping the data. No
 * hold is replica-confirmed on a cluster (README.md: `'auto'` sends no WAIT there), so each ends
 * as `'failover'` once the holder's client routes the slot to the new master (README.md,
 * **Replicas on a cluster**), though the hash went with it; its `unlock()` throws NotOwnerError.
 * The engine gives each ended hold back by the attempt that took it (an undo, which takes off
 * only what that attempt counted in the lock's current life), so the hash does not stay for its
 * lease. The waiters queued before the move are subscribed again on the new master by sharded
 * pub/sub: each takes its lock long before a poll or that lease.
 */
describe('Redisson locks on a cluster whose slot moves to another master', () => {
  let cluster: RedisCluster;
  const lost: string[] = [];
  const onLost = (message: unknown) =>
    lost.push(`${(message as LostEvent).key}: ${(message as LostEvent).reason}`);

  beforeAll(async () => {
    cluster = await startCluster({ masters: 2, replicasPerMaster: 1 });
    lockEvents.lost.subscribe(onLost);
  });

  afterAll(async () => {
    lockEvents.lost.unsubscribe(onLost);
    await cluster.stop();
  });

  /** Holds each kind named in `tag`'s slot in one client, queues a waiter for each in another, and moves the slot. */
  async function acrossMove(tag: string, move: () => Promise<RedisServer>): Promise<void> {
    lost.length = 0;
    const holder = createRedisson({ redis: cluster.client() });
    const waiter = createRedisson({ redis: cluster.client(), retry: NO_POLLING });
    try {
      const names = ['rlock', 'fair', 'rw', 'fenced'].map((kind) => `{${tag}}:${kind}`);
      const held = fourKinds(holder, names);
      for (const lock of held) await lock.lock({ threadId: 1 });
      const fence = await holder.getFencedLock(names[3]!).getToken();
      const waiting = fourKinds(waiter, names);
      const answers = waitOn(waiting);
      const nodes = cluster.masters.map((node) => node.client());
      for (const name of names) await waiterSubscribed(nodes, name);

      const master = (await move()).client();
      // The hashes went with the slot (nothing the holder sends reaches the new master before this).
      expect(await Promise.all(names.map((name) => master.exists(name)))).toEqual([1, 1, 1, 1]);
      // Any command of the holder's client meeting the old master's MOVED refreshes its slots,
      // and the new master's run id is read then (the watchdog's own renewal would come a third
      // of the 30 s lease later, and find the hash still there).
      await waitFor('every hold to be lost', async () => {
        await held[0]!.isLocked();
        return lost.length >= names.length;
      });
      expect(lost.sort()).toEqual(names.map((name) => `${name}: failover`).sort());
      for (const lock of held) {
        await expect(lock.unlock({ threadId: 1 })).rejects.toBeInstanceOf(NotOwnerError);
      }
      for (const name of names) await waiterSubscribed([master], name);
      // Each ended hold is undone by the attempt that took it: the hashes are gone from the new
      // master, and the waiters take the locks, woken long before a poll.
      await expectHandedOver(held, waiter, waiting, names, answers, fence, async () => {});
    } finally {
      await Promise.all([holder.shutdown(), waiter.shutdown()]);
    }
  }

  // First: it picks the slot's destination among the masters the cluster started with.
  it('a resharding: holds end as failover, waiters woken on the new master by sharded pub/sub', async () => {
    await acrossMove('reshard', async () => {
      const migration = await cluster.migrateSlot({ key: '{reshard}' });
      await migration.finish();
      return migration.to;
    });
  }, 30_000);

  it('a shard failover: holds end as failover, waiters woken on the promoted replica by sharded pub/sub', async () => {
    await acrossMove('shard', async () => (await cluster.failover({ key: '{shard}' })).promoted);
  }, 30_000);
});
