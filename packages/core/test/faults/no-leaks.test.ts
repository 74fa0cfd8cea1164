import { createLocker, LockerClosedError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { controlRenewals } from '../support/renewals.js';
import { callsBetween, commandCalls } from './support/stats.js';

/** A short lease, so that a renewal left running would be due every 100 ms. */
const TTL = 300;
const LOCK_COMMANDS = ['evalsha', 'eval', 'pexpire', 'hset', 'hincrby', 'del', 'publish'];

/** Resources of a kind keeping the event loop alive (unref'd timers are not listed). */
function active(kind: 'Timeout' | 'TCPSocketWrap'): number {
  return process.getActiveResourcesInfo().filter((name) => name === kind).length;
}

/** A server, a locker on it and a second client for stats, with this process's timers and sockets counted before the locker existed. */
async function lockerWithBaseline() {
  const server = await startRedis();
  const redis = server.client();
  const stats = server.client();
  await Promise.all([redis.ping(), stats.ping()]);
  const baseline = { timers: active('Timeout'), sockets: active('TCPSocketWrap') };
  const locker = createLocker({ redis, ttl: TTL });
  /**
   * After close(): no lock command while a control lock (same ttl, taken after close()) is renewed
   * twice, by when any renewal the closed locker still had armed was due; and nothing of the
   * locker left alive.
   */
  const expectQuietAfterClose = async () => {
    const closedAt = await commandCalls(stats);
    {
      // A server of its own keeps the control lock's commands out of the stats.
      await using control = await startRedis();
      const controlLocker = createLocker({ redis: control.client(), ttl: TTL });
      expect(await controlRenewals(controlLocker, 2)).toEqual([1, 1]);
      await controlLocker.close();
    }
    // Redis answers in order: whatever the closed locker sent before this has been counted.
    await redis.ping();
    expect(callsBetween(closedAt, await commandCalls(stats), LOCK_COMMANDS)).toBe(0);
    expect(active('Timeout')).toBeLessThanOrEqual(baseline.timers);
    expect(active('TCPSocketWrap')).toBe(baseline.sockets);
  };
  return { server, stats, locker, baseline, expectQuietAfterClose };
}

it('S22: 1 000 acquire/using/release cycles, then close(): no lock command after the last release, no timer left', async () => {
  const setup = await lockerWithBaseline();
  await using _server = setup.server;
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
  const afterLastRelease = await commandCalls(stats);
  expect(callsBetween(new Map(), afterLastRelease, ['evalsha', 'eval'])).toBeGreaterThanOrEqual(1_000);
  // The waiting path ran: the locker's own subscriber connection is open until close().
  expect(afterLastRelease.get('subscribe')).toBeGreaterThan(0);
  expect(active('TCPSocketWrap')).toBeGreaterThan(baseline.sockets);
  await locker.close();
  expect(callsBetween(afterLastRelease, await commandCalls(stats), LOCK_COMMANDS)).toBe(0);
  await setup.expectQuietAfterClose();
  // Only the shared fence counter and its epoch stamp remain (they never expire, by design): no lock key is left.
  expect((await stats.keys('*')).sort()).toEqual(['{lock:#}:fences', '{lock:#}:fences:epoch']);
});

it('S22: close() with a renewed lock held and a waiter pending: the waiter rejects, then no lock command and no timer', async () => {
  const setup = await lockerWithBaseline();
  await using _server = setup.server;
  const { stats, locker } = setup;
  const held = await locker.acquire('busy');
  const settled = locker.acquire('busy', { wait: 10_000 }).then(
    () => 'acquired',
    (error: unknown) => error,
  );
  // The waiter has subscribed and sleeps.
  while ((await stats.pubsub('NUMSUB', '{lock:busy}:released'))[1] !== 1) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await locker.close();
  expect(await settled).toBeInstanceOf(LockerClosedError);
  // close() gives the lock up, and the handle knows: its holder must stop writing.
  expect(await stats.exists('{lock:busy}')).toBe(0);
  expect(() => held.assertHeld()).toThrow();
  expect(held.signal.aborted).toBe(true);
  expect(await held.release()).toBe('released');
  await setup.expectQuietAfterClose();
});
