import { type ExtendEvent, type LostEvent, lockEvents } from '@lock/core';
import { connectedAgainOnEnd, startSentinel, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { waiterSubscribed } from '../../core/test/contract/keys.js';
import { createRedisson } from '../src/index.js';
import { expectHandedOver, fourKinds, NO_POLLING, waitOn } from './helpers/four-kinds.js';

/**
 * Longer than the failover, so that the holds outlive it; renewed every 6.7 s. The failover takes
 * about 2 s from the kill to the promotion, but on a loaded host the sentinels' first election may
 * fail, and the next comes twice `FAILOVER_TIMEOUT` after the first: the promotion then comes some
 * 9 s after the kill. A lease that runs out while there is no master is rightly lost
 * ('renewal-failed').
 */
const WATCHDOG = 20_000;
/** The sentinels' `failover-timeout`: a failed election is tried again after twice this. */
const FAILOVER_TIMEOUT = 4_000;

/**
 * Holds a replica confirmed (WAIT gating) survive the SIGKILL of their master: the holder keeps
 * renewing them on the promoted replica and is never told they are lost, and waiters queued
 * before the kill, subscribed again on the new master, are woken by the holder's unlock there
 * and take the locks, whether the promoted replica has a replica of its own or none (the killed
 * master was the only other node: `replication: 'auto'`, which asks again after the reconnect,
 * has nothing to wait for there; its WAITs, sent on the old answer, held the connection 250 ms
 * each, the waiters' grants behind them came too late and were undone, and the fair waiter, out
 * of the queue by then, was left to its next poll).
 */
it.each([
  { replicas: 2, promoted: 'a replica of its own' },
  { replicas: 1, promoted: 'no replica' },
])(
  'a Sentinel master killed under held locks and queued waiters, the promoted one with $promoted: holds renewed there, waiters woken by the unlock',
  async ({ replicas }) => {
    const lost: string[] = [];
    const onLost = (message: unknown) =>
      lost.push(`${(message as LostEvent).key}: ${(message as LostEvent).reason}`);
    const renewed = new Set<string>();
    const onExtend = (message: unknown) => {
      const event = message as ExtendEvent;
      if (event.renewal) renewed.add(event.key);
    };
    lockEvents.lost.subscribe(onLost);
    lockEvents.extend.subscribe(onExtend);
    const setup = await startSentinel({
      replicas,
      sentinels: 3,
      failoverTimeout: FAILOVER_TIMEOUT,
      timeout: 60_000,
    });
    const holderRedis = setup.client({ failoverDetector: true });
    const holderClient = createRedisson({ redis: holderRedis, lockWatchdogTimeout: WATCHDOG });
    const waiterRedis = setup.client({ failoverDetector: true });
    // ioredis may end either client in the failover (the waiter's, 1 loaded run in 20).
    const stopReconnecting = [holderRedis, waiterRedis].map(connectedAgainOnEnd);
    const waiterClient = createRedisson({
      redis: waiterRedis,
      lockWatchdogTimeout: WATCHDOG,
      retry: NO_POLLING,
    });
    try {
      const names = ['killed:rlock', 'killed:fair', 'killed:rw', 'killed:fenced'];
      const held = fourKinds(holderClient, names);
      for (const lock of held) await lock.lock({ threadId: 1 });
      const fence = await holderClient.getFencedLock(names[3]!).getToken();
      const waiting = fourKinds(waiterClient, names);
      const answers = waitOn(waiting);
      const old = await setup.master();
      for (const name of names) await waiterSubscribed([old.client()], name);
      // The fair waiter's queue entry must reach the replica: only acquisitions wait for one.
      await old.client().call('WAIT', '1', '2000');

      await old.kill();
      // The unlocks must find the waiters' connection up: a waiter woken while it is being made
      // again has its attempt held past its command timeout, and is then left to its next poll
      // (it failed 1 run in 16 on a loaded host). It reconnects after the kill, and again on
      // each sentinel's +switch-master (`failoverDetector`), published as that sentinel switches.
      const promoted = await setup.switchedFrom(old);
      await waiterRedis.ping();
      // A renewal that succeeds once every sentinel switched was made on the new master.
      renewed.clear();
      const onPromoted = promoted.client();
      await waitFor('a renewal of every hold on the new master', async () => {
        return lost.length > 0 || names.every((name) => renewed.has(name)); // a loss is named below
      });
      expect(lost).toEqual([]);
      for (const name of names) await waiterSubscribed([onPromoted], name);
      expect(await Promise.all(held.map((lock) => lock.isHeldByThread(1)))).toEqual([true, true, true, true]);
      await expectHandedOver(held, waiterClient, waiting, names, answers, fence);
      expect(lost).toEqual([]);
    } finally {
      for (const stop of stopReconnecting) stop();
      await Promise.all([holderClient.shutdown(), waiterClient.shutdown()]);
      lockEvents.lost.unsubscribe(onLost);
      lockEvents.extend.unsubscribe(onExtend);
      await setup.stop();
    }
  },
  120_000,
);
