import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, createRedlock, keySlot, type Lock, type LockLostError } from '@lock/core';
import { startCluster, startMasters, startRedis, waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { failedRenewal } from '../support/renewals.js';

/**
 * Resolves once the watchdog has renewed every lock of `locks` (a `lock:extend` with
 * `renewal: true` for each), or as soon as one of them is lost: a window sized by real renewal
 * rounds, which the losses of a round that fails for every lock end early.
 */
function renewedOrOneLost(locks: readonly Lock[]): Promise<void> {
  return new Promise((resolve) => {
    const waiting = new Set(locks.map((lock) => lock.key));
    const settle = () => {
      unsubscribe('lock:extend', onExtend);
      for (const lock of locks) lock.signal.removeEventListener('abort', settle);
      resolve();
    };
    const onExtend = (message: unknown) => {
      const event = message as { key: string; renewal: boolean };
      if (event.renewal && waiting.delete(event.key) && waiting.size === 0) settle();
    };
    subscribe('lock:extend', onExtend);
    for (const lock of locks) lock.signal.addEventListener('abort', settle, { once: true });
    if (locks.some((lock) => lock.signal.aborted)) settle();
  });
}

/**
 * Why `clobbered` was lost, once it is, and which of `others` were lost over a full renewal
 * round after it.
 */
async function lossesAfter(
  clobbered: Lock,
  others: readonly Lock[],
): Promise<{ clobbered: string; others: string[] }> {
  await waitFor('the overwritten lock to be lost', async () => clobbered.signal.aborted, { timeout: 5_000 });
  const reason = (clobbered.signal.reason as LockLostError).reason;
  await renewedOrOneLost(others);
  return { clobbered: reason, others: lostReasons(others) };
}

function lostReasons(locks: readonly Lock[]): string[] {
  return locks
    .filter((lock) => lock.signal.aborted)
    .map((lock) => (lock.signal.reason as LockLostError).reason);
}

describe('a renewal round that fails for some locks', () => {
  it.each([
    { protocol: 'token' as const, clobber: '{lock:k99}', keyOf: (key: string) => `{lock:${key}}` },
    // The legacy lock key keeps its exact name; what a stranger overwrites is its owner record.
    { protocol: 'legacy' as const, clobber: '{lock:k99}:owner', keyOf: (key: string) => `lock:${key}` },
  ])(
    'keeps the other $protocol locks of its batch when one key of a lock was overwritten with another type',
    async ({ protocol, clobber, keyOf }) => {
      await using server = await startRedis();
      const admin = server.client();
      const locker = createLocker({
        redis: server.client(),
        protocol,
        replication: false,
        eviction: 'ignore',
        ttl: 1_500,
      });
      const locks = await Promise.all(Array.from({ length: 100 }, (_, i) => locker.acquire(`k${i}`)));
      const clobbered = locks[99]!;
      const others = locks.slice(0, 99);
      await admin.del(clobber);
      await admin.set(clobber, 'x');
      // With the batch failing as a whole, the others were lost with it (their validity ended
      // while every retry failed).
      expect(await lossesAfter(clobbered, others)).toEqual({ clobbered: 'taken', others: [] });
      const pttls = await Promise.all(others.map((lock) => admin.pttl(keyOf(lock.key))));
      expect(pttls.filter((pttl) => pttl <= 0)).toEqual([]);
      await locker.close();
    },
    30_000,
  );

  it('keeps the other RedLock leases when one lock key was overwritten on a majority of masters', async () => {
    await using masters = await startMasters(3);
    const locker = createRedlock({ clients: masters.servers.map((server) => server.client()), ttl: 1_500 });
    const locks = await Promise.all(Array.from({ length: 20 }, (_, i) => locker.acquire(`k${i}`)));
    const clobbered = locks[19]!;
    const others = locks.slice(0, 19);
    for (const server of masters.servers.slice(0, 2)) {
      const admin = server.client();
      await admin.del('{lock:k19}');
      await admin.set('{lock:k19}', 'x');
    }
    // With that key failing the renewal on two masters, the other leases of the batch lacked a
    // majority there too.
    expect(await lossesAfter(clobbered, others)).toEqual({ clobbered: 'taken', others: [] });
    await locker.close();
  }, 30_000);

  it('keeps the locks on healthy cluster masters renewed while another master is frozen', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0, nodeTimeout: 60_000 });
    // The healthy masters' renewals must be answered within the command timeout, before the
    // frozen one's fails: 300 ms was not always enough for a loaded CI machine (three healthy
    // locks missed it once); both are doubled, with the wait for the losses that follow.
    const locker = createLocker({
      redis: cluster.client(),
      ttl: 3_000,
      commandTimeout: 600,
      eviction: 'ignore',
    });
    const locks = await Promise.all(Array.from({ length: 30 }, (_, i) => locker.acquire(`c${i}`)));
    const frozen = cluster.slotRanges[2]!;
    const onFrozen = (lock: Lock) => {
      const slot = keySlot(`{lock:${lock.key}}`);
      return slot >= frozen.start && slot <= frozen.end;
    };
    const stuck = locks.filter(onFrozen);
    const healthy = locks.filter((lock) => !onFrozen(lock));
    // The 30 names are fixed, and spread over the three masters.
    expect([stuck.length > 0, healthy.length > 0]).toEqual([true, true]);
    const renewed = new Set<string>();
    const onExtend = (message: unknown) => {
      const event = message as { key: string; renewal: boolean };
      if (event.renewal) renewed.add(event.key);
    };
    subscribe('lock:extend', onExtend);
    frozen.master.pause();
    let renewedBeforeFirstFailure: string[];
    try {
      // The 30 locks were taken together, so the first round after the freeze renews them all:
      // the locks on the healthy masters are answered before the frozen master's time out.
      await failedRenewal();
      renewedBeforeFirstFailure = [...renewed];
      await waitFor(
        'the locks on the frozen master to be lost',
        async () => stuck.every((lock) => lock.signal.aborted),
        {
          timeout: 10_000,
        },
      );
      await renewedOrOneLost(healthy);
    } finally {
      unsubscribe('lock:extend', onExtend);
      frozen.master.resume();
    }
    expect(renewedBeforeFirstFailure.sort()).toEqual(healthy.map((lock) => lock.key).sort());
    expect(new Set(lostReasons(stuck))).toEqual(new Set(['renewal-failed']));
    expect(lostReasons(healthy)).toEqual([]);
    await locker.close();
  }, 60_000);
});
