import { type ExtendEvent, type LostEvent, lockEvents } from '@lock/core';
import { type RedisCluster, type RedisServer, startCluster, waitFor } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waiterSubscribed } from '../../core/test/contract/keys.js';
import { createRedisson } from '../src/index.js';
import { expectHandedOver, fourKinds, NO_POLLING, waitOn } from './helpers/four-kinds.js';

/**
 * A slot's master changes under held locks and waiting calls: a shard failover (the replica
 * promoted) or a resharding (the slot migrated to another master), both keeping the data. No
 * hold is replica-confirmed on a cluster (README.md: `'auto'` sends no WAIT there), and the
 * holds are a thread's (an explicit owner): once the holder's client routes the slot to the new
 * master, each is renewed there at once, which finds it still held, and keeps it (ended instead,
 * it would stay counted in Redis for its lease, its unlock answering NotOwnerError, and the
 * thread's next lock() would re-enter that count). The waiters queued before the move are
 * subscribed again on the new master by sharded pub/sub: the holder's unlock there wakes each
 * of them long before a poll.
 */
describe('Redisson locks on a cluster whose slot moves to another master', () => {
  let cluster: RedisCluster;
  const lost: string[] = [];
  const renewed = new Set<string>();
  const onLost = (message: unknown) =>
    lost.push(`${(message as LostEvent).key}: ${(message as LostEvent).reason}`);
  const onExtend = (message: unknown) => {
    const event = message as ExtendEvent;
    if (event.renewal) renewed.add(event.key);
  };

  beforeAll(async () => {
    cluster = await startCluster({ masters: 2, replicasPerMaster: 1 });
    lockEvents.lost.subscribe(onLost);
    lockEvents.extend.subscribe(onExtend);
  });

  afterAll(async () => {
    lockEvents.lost.unsubscribe(onLost);
    lockEvents.extend.unsubscribe(onExtend);
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
      const answers = waitOn(fourKinds(waiter, names));
      const nodes = cluster.masters.map((node) => node.client());
      for (const name of names) await waiterSubscribed(nodes, name);

      renewed.clear();
      const master = (await move()).client();
      // Any command of the holder's client meeting the old master's MOVED refreshes its slots,
      // and the new master's run id, read then, renews every hold there at once (the watchdog's
      // own schedule is a third of the 30 s lease).
      await waitFor('every hold renewed on the new master', async () => {
        await held[0]!.isLocked();
        return names.every((name) => renewed.has(name));
      });
      expect(lost).toEqual([]);
      for (const lock of held) expect(await lock.isHeldByCurrentThread({ threadId: 1 })).toBe(true);
      expect(await Promise.all(names.map((name) => master.exists(name)))).toEqual([1, 1, 1, 1]);
      for (const name of names) await waiterSubscribed([master], name);
      await expectHandedOver(held, waiter, names, answers, fence);
    } finally {
      await Promise.all([holder.shutdown(), waiter.shutdown()]);
    }
  }

  // First: it picks the slot's destination among the masters the cluster started with.
  it('a resharding: holds renewed and kept on the new master, waiters woken there by sharded pub/sub', async () => {
    await acrossMove('reshard', async () => {
      const migration = await cluster.migrateSlot({ key: '{reshard}' });
      await migration.finish();
      return migration.to;
    });
  }, 30_000);

  it('a shard failover: holds renewed and kept on the promoted replica, waiters woken there by sharded pub/sub', async () => {
    await acrossMove('shard', async () => (await cluster.failover({ key: '{shard}' })).promoted);
  }, 30_000);
});
