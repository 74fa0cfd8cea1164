import { createLocker, LockerClosedError } from '@lock/core';
import { startMasters, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { waiterSubscribed } from '../contract/keys.js';
import { DEPLOYMENTS, type Deployment, lease } from '../support/deployments.js';
import { controlRenewals } from '../support/renewals.js';
import { callsBetween, commandCalls } from './support/stats.js';

/** A short lease, so that a renewal left running would be due every third of it. */
const TTL = 300;
/** What any of the formats writes with, directly or from its scripts. */
const LOCK_COMMANDS = [
  'evalsha',
  'eval',
  'set',
  'incr',
  'pexpire',
  'pexpireat',
  'hset',
  'hincrby',
  'del',
  'publish',
];

/** Resources of a kind keeping the event loop alive (unref'd timers are not listed). */
function active(kind: 'Timeout' | 'TCPSocketWrap'): number {
  return process.getActiveResourcesInfo().filter((name) => name === kind).length;
}

/** Calls per command, summed over every master. */
async function allCalls(stats: readonly Redis[]): Promise<Map<string, number>> {
  const sum = new Map<string, number>();
  for (const calls of await Promise.all(stats.map(commandCalls))) {
    for (const [name, count] of calls) sum.set(name, (sum.get(name) ?? 0) + count);
  }
  return sum;
}

/**
 * The deployment's masters, a locker on them and a second client per master for stats, with this
 * process's timers and sockets counted before the locker existed.
 */
async function lockerWithBaseline(target: Deployment) {
  const masters = await startMasters(target.masters);
  const clients = masters.clients();
  const stats = masters.clients();
  await Promise.all([...clients, ...stats].map((client) => client.ping()));
  const baseline = { timers: active('Timeout'), sockets: active('TCPSocketWrap') };
  const ttl = lease(target, TTL);
  const locker = target.create(clients, { ttl });
  /**
   * After close(): no lock command while a control lock (same ttl, taken after close()) is renewed
   * twice, by when any renewal the closed locker still had armed was due; and nothing of the
   * locker left alive.
   */
  const expectQuietAfterClose = async () => {
    const closedAt = await allCalls(stats);
    {
      // A server of its own keeps the control lock's commands out of the stats.
      await using control = await startRedis();
      const controlLocker = createLocker({ redis: control.client(), ttl });
      expect(await controlRenewals(controlLocker, 2)).toEqual([1, 1]);
      await controlLocker.close();
    }
    // Redis answers in order: whatever the closed locker sent before this has been counted.
    await Promise.all(clients.map((client) => client.ping()));
    expect(callsBetween(closedAt, await allCalls(stats), LOCK_COMMANDS)).toBe(0);
    expect(active('Timeout')).toBeLessThanOrEqual(baseline.timers);
    expect(active('TCPSocketWrap')).toBe(baseline.sockets);
  };
  return { masters, stats, locker, baseline, expectQuietAfterClose };
}

it.each(DEPLOYMENTS)(
  'S22 ($name): 1 000 acquire/using/release cycles, then close(): no lock command after the last release, no timer left',
  async (target) => {
    const setup = await lockerWithBaseline(target);
    await using _masters = setup.masters;
    const { stats, locker, baseline } = setup;
    for (let i = 0; i < 250; i++) {
      const lock = await locker.acquire(`cycle:${i % 7}`);
      await lock.release();
      await locker.using(`cycle:${i % 5}`, async () => {});
      // Two call chains on one key: one of them waits, which subscribes to release messages.
      await Promise.all([
        locker.using(`contended:${i % 3}`, async () => {}),
        locker.using(`contended:${i % 3}`, async () => {}),
      ]);
    }
    const afterLastRelease = await allCalls(stats);
    expect(callsBetween(new Map(), afterLastRelease, ['evalsha', 'eval'])).toBeGreaterThanOrEqual(1_000);
    // The waiting path ran: the locker's own subscriber connection is open until close().
    expect(afterLastRelease.get('subscribe')).toBeGreaterThan(0);
    expect(active('TCPSocketWrap')).toBeGreaterThan(baseline.sockets);
    await locker.close();
    expect(callsBetween(afterLastRelease, await allCalls(stats), LOCK_COMMANDS)).toBe(0);
    await setup.expectQuietAfterClose();
    // Only the shared fence counter and its epoch stamp remain on each master (they never expire,
    // by design): no lock key is left.
    for (const master of stats) {
      expect((await master.keys('*')).sort()).toEqual(['{lock:#}:fences', '{lock:#}:fences:epoch']);
    }
  },
);

it.each(DEPLOYMENTS)(
  'S22 ($name): close() with a renewed lock held and a waiter pending: the waiter rejects, then no lock command and no timer',
  async (target) => {
    const setup = await lockerWithBaseline(target);
    await using _masters = setup.masters;
    const { stats, locker } = setup;
    const held = await locker.acquire('busy');
    const settled = locker.acquire('busy', { wait: 10_000 }).then(
      () => 'acquired',
      (error: unknown) => error,
    );
    await waiterSubscribed(stats, 'busy');
    await locker.close();
    expect(await settled).toBeInstanceOf(LockerClosedError);
    // close() gives the lock up, and the handle knows: its holder must stop writing.
    const checker = target.create(stats);
    expect(await checker.isLocked('busy')).toBe(false);
    await checker.close();
    expect(() => held.assertHeld()).toThrow();
    expect(held.signal.aborted).toBe(true);
    expect(await held.release()).toBe('released');
    await setup.expectQuietAfterClose();
  },
);
