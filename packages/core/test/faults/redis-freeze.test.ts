import { type Lock, LockLostError } from '@lock/core';
import { startMasters } from '@lock/testing';
import { expect, it } from 'vitest';
import { keysWithoutTtl } from '../contract/keys.js';
import { FENCE_COUNTERS } from '../contract/target.js';
import { DEPLOYMENTS, type DeploymentName, lease } from '../support/deployments.js';
import { controlRenewals, renewals } from '../support/renewals.js';

/**
 * Each loss is declared at the end of its validity, by its own clock: `renewal-failed` where a
 * renewal sent into the sleep has given up by then (its commandTimeout is shorter than the rest
 * of a whole-second or per-master validity), `expired` where none had.
 */
const FROZEN_LOSS: Record<DeploymentName, string> = {
  token: 'expired',
  'legacy ms': 'expired',
  'legacy s': 'renewal-failed',
  redlock: 'renewal-failed',
};

/** Longer than every lease below (2 to 3 of them), short enough for the default tier. */
const SLEEP = 2_000;

it.each(DEPLOYMENTS)(
  'S8 ($name): every master blocked by DEBUG SLEEP past the lease: every handle is lost from its own clock while it sleeps, and stays lost',
  async (target) => {
    await using masters = await startMasters(target.masters);
    const clients = masters.clients();
    const ttl = lease(target, 600);
    const locker = target.create(clients, { ttl });
    const locks: Lock[] = [];
    for (let i = 0; i < 5; i++) locks.push(await locker.acquire(`frozen:${i}`));
    const abortedAt = locks.map(
      (lock) =>
        new Promise<{ at: number; validUntil: number }>((resolve) =>
          lock.signal.addEventListener(
            'abort',
            () => resolve({ at: performance.now(), validUntil: lock.validUntil }),
            { once: true },
          ),
        ),
    );
    // Deadlines under test come from a renewal, not from the acquisitions.
    await renewals(locks.length);
    const sleepStarted = performance.now();
    const wokeAt = Promise.all(masters.servers.map((server) => server.debugSleep(SLEEP))).then(() =>
      performance.now(),
    );
    const losses = await Promise.all(abortedAt);
    for (const lock of locks) {
      expect((lock.signal.reason as LockLostError).reason).toBe(FROZEN_LOSS[target.name]);
      expect(() => lock.assertHeld()).toThrow(LockLostError);
    }
    const woke = await wokeAt;
    for (const { at, validUntil } of losses) {
      expect(validUntil).toBeLessThanOrEqual(sleepStarted + ttl);
      // Not before its validity ended, and seconds before Redis could answer anything: the
      // holder's own clock told it.
      expect(at).toBeGreaterThanOrEqual(validUntil);
      expect(at).toBeLessThan(woke);
    }
    // The renewals queued during the sleep ran before the control lock's, sent after them on the
    // same connection; two of its rounds outlast any renewal a timer could still send. None may
    // resurrect a key or a belief.
    expect(await controlRenewals(locker, 2)).toEqual([1, 1]);
    for (const [i, lock] of locks.entries()) {
      expect(lock.validUntil).toBe(losses[i]!.validUntil);
      expect(() => lock.assertHeld()).toThrow(LockLostError);
      await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
      expect(await locker.isLocked(`frozen:${i}`)).toBe(false);
    }
    const next = await locker.acquire('frozen:0', { ttl: 5_000, wait: 0 });
    expect(next.fence).toBeGreaterThan(locks[0]!.fence);
    // Nothing the sleep interrupted was left without a TTL: only fence counters and their stamps.
    const untimed = (await Promise.all(clients.map(keysWithoutTtl))).flat();
    expect(untimed.filter((key) => !FENCE_COUNTERS.test(key))).toEqual([]);
    await next.release();
    await Promise.all(locks.map((lock) => lock.release()));
    await locker.close();
  },
);
