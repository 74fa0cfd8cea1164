import { createLocker, type Lock, type Locker } from '@lock/core';
import { type RedisServer, startProxy, startRedis, type TcpProxy, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { SLOW_POLL, untilQueued } from '../support/waiter-queue.js';

/**
 * A waiter's subscriber connection (the duplicate of its client) goes through a proxy that holds
 * everything back: its SUBSCRIBE is not answered until the test lets it through, while the lock
 * commands themselves flow. Joining the wait queue is then the slow step of a waiting call.
 */
let server: RedisServer;
let subscriberLink: TcpProxy;
let direct: Redis;
let waiterRedis: Redis;
let holder: Locker;
beforeEach(async () => {
  server = await startRedis();
  subscriberLink = await startProxy({ target: server });
  direct = server.client();
  waiterRedis = server.client();
  const throughLink = subscriberLink.redisOptions;
  waiterRedis.duplicate = (override) => new Redis({ ...waiterRedis.options, ...override, ...throughLink });
  await waiterRedis.ping();
  holder = createLocker({ redis: direct });
  subscriberLink.blackhole();
});
afterEach(async () => {
  subscriberLink.pass();
  await holder.close();
  await subscriberLink.stop();
  await server.stop();
});

/**
 * The join gives up after the command timeout (or the wait, if shorter): half a minute here, so a
 * call that waits for it is far from one that settles at once. Tests run for longer, so such a call
 * fails by its bound below, not by the test's timeout.
 */
const JOIN_BOUND = 30_000;
const TEST_TIMEOUT = 2 * JOIN_BOUND;
/** Generous for a loaded 2-core machine, still far below `JOIN_BOUND`. */
const AT_ONCE_MS = 10_000;

/** Times how long `settling` takes to settle once `trigger` ran; answers its outcome. */
async function settleAfter(trigger: () => unknown, settling: Promise<unknown>) {
  const started = performance.now();
  trigger();
  const outcome = await settling.then(
    () => 'acquired',
    (error: unknown) => error,
  );
  return { outcome, ms: performance.now() - started };
}

it.each([
  ['an abort', 'AbortError'],
  ['close()', 'LockerClosedError'],
] as const)(
  '%s while a call joins the wait queue rejects it at once, not when the join gives up',
  async (what, name) => {
    const held = await holder.acquire('k', { ttl: 60_000 });
    const locker = createLocker({ redis: waiterRedis, commandTimeout: JOIN_BOUND, retry: SLOW_POLL });
    const controller = new AbortController();
    const waiting = locker.acquire('k', { wait: 2 * JOIN_BOUND, signal: controller.signal });
    await untilQueued(direct, 'k', 1);
    const { outcome, ms } = await settleAfter(
      () => (what === 'close()' ? void locker.close() : controller.abort()),
      waiting,
    );
    expect(outcome).toMatchObject({ name });
    expect(ms).toBeLessThan(AT_ONCE_MS);
    await held.release();
    await locker.close();
  },
  TEST_TIMEOUT,
);

it('a waiter whose subscription came after its join gave up still hears the release: it is not dropped from the queue', async () => {
  const held = await holder.acquire('k', { ttl: 60_000 });
  // Polls once a minute: only the release message can hand it the lock within the test.
  const locker = createLocker({ redis: waiterRedis, commandTimeout: 300, retry: SLOW_POLL });
  const waiting = locker.acquire('k', { wait: 30_000 });
  await untilQueued(direct, 'k', 1);
  // Well past the join's own bound (the command timeout): it has given up and the call polls.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  subscriberLink.pass();
  await waitFor(
    'the waiter to subscribe',
    async () => ((await direct.pubsub('NUMSUB', '{lock:k}:released')) as [string, number])[1] > 0,
  );
  await held.release();
  const handed = await Promise.race([
    waiting.then((lock) => lock),
    new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 10_000)),
  ]);
  expect(handed).not.toBe('still waiting');
  await (handed as Lock).release();
  await locker.close();
});

it(
  'an abort while the first attempt is in flight ends the call once it is answered, not when the join that follows gives up',
  async () => {
    const held = await holder.acquire('k', { ttl: 60_000 });
    const locker = createLocker({ redis: waiterRedis, commandTimeout: JOIN_BOUND, retry: SLOW_POLL });
    // Scripts wait 300 ms on the server: the attempt is in flight when the abort comes.
    await direct.call('CLIENT', 'PAUSE', '300', 'WRITE');
    const controller = new AbortController();
    const waiting = locker.acquire('k', { wait: 2 * JOIN_BOUND, signal: controller.signal });
    const { outcome, ms } = await settleAfter(() => controller.abort(), waiting);
    expect(outcome).toMatchObject({ name: 'AbortError' });
    // The attempt is answered after the pause; the join after it would give up after half a minute.
    expect(ms).toBeLessThan(AT_ONCE_MS);
    await held.release();
    await locker.close();
  },
  TEST_TIMEOUT,
);
