import { createLocker, LockerClosedError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { callsBetween, commandCalls } from './support/stats.js';

const TTL = 300;
const LOCK_COMMANDS = ['evalsha', 'eval', 'pexpire', 'hset', 'hincrby', 'del', 'publish'];

/** Resources of a kind keeping the event loop alive (unref'd timers are not listed). */
function active(kind: 'Timeout' | 'TCPSocketWrap'): number {
  return process.getActiveResourcesInfo().filter((name) => name === kind).length;
}

it('S22: 1 000 acquire/using/release cycles, then close(): no lock command after the last release, no timer left', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const stats = server.client();
  await Promise.all([redis.ping(), stats.ping()]);
  const timersBefore = active('Timeout');
  const socketsBefore = active('TCPSocketWrap');
  // A short lease so that a renewal left running would be due every 100 ms.
  const locker = createLocker({ redis, ttl: TTL });
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
  expect(active('TCPSocketWrap')).toBeGreaterThan(socketsBefore);
  await locker.close();
  // More than a whole lease (three renewal intervals): a stray renewal would have run by then.
  await new Promise((resolve) => setTimeout(resolve, TTL + 100));
  const afterClose = await commandCalls(stats);
  expect(callsBetween(afterLastRelease, afterClose, LOCK_COMMANDS)).toBe(0);
  expect(active('Timeout')).toBeLessThanOrEqual(timersBefore);
  expect(active('TCPSocketWrap')).toBe(socketsBefore);
  expect(await stats.dbsize()).toBe(
    // Only the fence counters remain (they never expire by design); no lock key is left.
    (await stats.keys('*:fence')).length,
  );
});

it('S22: close() with a renewed lock held and a waiter pending: the waiter rejects, then no lock command and no timer', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const stats = server.client();
  await Promise.all([redis.ping(), stats.ping()]);
  const timersBefore = active('Timeout');
  const socketsBefore = active('TCPSocketWrap');
  const locker = createLocker({ redis, ttl: TTL });
  const held = await locker.acquire('busy');
  const waiting = locker.acquire('busy', { wait: 10_000 });
  const settled = waiting.then(
    () => 'acquired',
    (error: unknown) => error,
  );
  // The waiter has subscribed and sleeps.
  while ((await stats.pubsub('NUMSUB', '{lock:busy}:released'))[1] !== 1) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await locker.close();
  expect(await settled).toBeInstanceOf(LockerClosedError);
  // close() either leaves the lock in Redis (its lease then runs out) or gives it up; then the
  // handle must know, or its holder keeps writing while another process may hold the lock.
  if ((await stats.exists('{lock:busy}')) === 0) {
    expect(() => held.assertHeld()).toThrow();
    expect(held.signal.aborted).toBe(true);
  }
  const afterClose = await commandCalls(stats);
  await new Promise((resolve) => setTimeout(resolve, TTL + 100));
  expect(callsBetween(afterClose, await commandCalls(stats), LOCK_COMMANDS)).toBe(0);
  expect(active('Timeout')).toBeLessThanOrEqual(timersBefore);
  expect(active('TCPSocketWrap')).toBe(socketsBefore);
});
