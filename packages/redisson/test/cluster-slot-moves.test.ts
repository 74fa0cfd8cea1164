import { type ExtendEvent, type LostEvent, lockEvents } from '@lock/core';
import { type RedisCluster, type RedisServer, startCluster, waitFor } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waiterSubscribed } from '../../core/test/contract/keys.js';
import { createRedisson, type Redisson } from '../src/index.js';

/** Polling effectively off: within the test only an unlock message can wake a waiter. */
const NO_POLLING = { base: 60_000, max: 60_000, jitter: 0 };
/** Shorter than one poll: a waiter still waiting by then was never woken. */
const WAIT = 20_000;
/** How long the woken waiters may take to answer: a few round trips, far below `WAIT` and the holds' 30 s lease. */
const WOKEN_WITHIN = 5_000;

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
      const kinds = (redisson: Redisson) => [
        redisson.getLock(names[0]!),
        redisson.getFairLock(names[1]!),
        redisson.getReadWriteLock(names[2]!).writeLock(),
        redisson.getFencedLock(names[3]!),
      ];
      const held = kinds(holder);
      const waiting = kinds(waiter);
      for (const lock of held) await lock.lock({ threadId: 1 });
      const fence = await holder.getFencedLock(names[3]!).getToken();
      const answers: (boolean | undefined)[] = waiting.map(() => undefined);
      const taken = waiting.map((lock, i) =>
        lock.tryLock({ wait: WAIT, threadId: 1 }).then((answer) => {
          answers[i] = answer;
          return answer;
        }),
      );
      // Settled by shutdown() when the test fails before they are awaited.
      for (const attempt of taken) attempt.catch(() => {});
      for (const name of names)
        await waiterSubscribed(
          cluster.masters.map((node) => node.client()),
          name,
        );

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

      for (const lock of held) await lock.unlock({ threadId: 1 });
      await waitFor(
        'the woken waiters to answer',
        async () => answers.every((answer) => answer !== undefined),
        {
          timeout: WOKEN_WITHIN,
        },
      ).catch(() => {});
      expect(Object.fromEntries(names.map((name, i) => [name, answers[i]]))).toEqual(
        Object.fromEntries(names.map((name) => [name, true])),
      );
      expect(await waiter.getFencedLock(names[3]!).getToken()).toBeGreaterThan(fence!);
      for (const lock of waiting) await lock.unlock({ threadId: 1 });
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
