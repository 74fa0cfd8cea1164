import { createLocker, type Locker } from '@lock/core';
import { type RedisServer, startProxy, startRedis, type TcpProxy, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { timed, within } from '../support/settle.js';
import { countScripts, SLOW_POLL, until, untilQueued } from '../support/waiter-queue.js';

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
const CHANNEL = '{lock:k}:released';
/** The waiter's SUBSCRIBEs to the lock's channel (its joins), and how many are unanswered. */
let joins: { sent: number; unanswered: number };
beforeEach(async () => {
  server = await startRedis();
  subscriberLink = await startProxy({ target: server });
  direct = server.client();
  waiterRedis = server.client();
  joins = { sent: 0, unanswered: 0 };
  const throughLink = subscriberLink.redisOptions;
  waiterRedis.duplicate = (override) =>
    countingJoins(new Redis({ ...waiterRedis.options, ...override, ...throughLink }));
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

/** Counts in `joins` the SUBSCRIBEs to `{lock:k}:released` that `redis` sends, and their answers. */
function countingJoins(redis: Redis): Redis {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<typeof send>) => {
    const [command] = args;
    if (command.name === 'subscribe' && command.args.some((channel) => String(channel) === CHANNEL)) {
      joins.sent += 1;
      joins.unanswered += 1;
      const answered = () => {
        joins.unanswered -= 1;
      };
      command.promise.then(answered, answered);
    }
    return send(...args);
  }) as typeof send;
  return redis;
}

/**
 * The join gives up after the command timeout (or the wait, if shorter): half a minute here, so a
 * call that waits for it is far from one that settles at once. Tests run for longer, so such a call
 * fails by its bound below, not by the test's timeout.
 */
const JOIN_BOUND = 30_000;
const TEST_TIMEOUT = 2 * JOIN_BOUND;
/** Generous for a loaded 2-core machine, still far below `JOIN_BOUND`. */
const AT_ONCE_MS = 10_000;

/** How `settling` settles once `trigger` ran, and after how many ms. */
function settleAfter(trigger: () => unknown, settling: Promise<unknown>) {
  return timed(() => {
    trigger();
    return settling;
  });
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
    const settledWith: (typeof joins)[] = [];
    await untilQueued(direct, 'k', 1);
    // Queued by the server before its refusal reached the call, which then sends the join: on a
    // loaded host the test got here first once, and the call settled before joining.
    await until(async () => joins.sent === 1, 'the join sent');
    const { error, ms } = await settleAfter(
      () => (what === 'close()' ? void locker.close() : controller.abort()),
      waiting.finally(() => settledWith.push({ ...joins })),
    );
    expect(error).toMatchObject({ name });
    // It settled with its join sent and unanswered, and at once: the join was far from giving up.
    expect(settledWith).toEqual([{ sent: 1, unanswered: 1 }]);
    expect(ms).toBeLessThan(AT_ONCE_MS);
    await held.release();
    await locker.close();
  },
  TEST_TIMEOUT,
);

/**
 * Resolves once `redis` answers the first script it sends from now on: for a waiting call, its
 * first attempt, whose refusal makes the call join the queue as the answer is handled.
 */
function firstScriptAnswered(redis: Redis): Promise<void> {
  const evalsha = redis.evalsha.bind(redis);
  return new Promise((resolve) => {
    redis.evalsha = ((...args: Parameters<typeof evalsha>) => {
      redis.evalsha = evalsha;
      const answer = evalsha(...args);
      answer.then(
        () => resolve(),
        () => resolve(),
      );
      return answer;
    }) as typeof evalsha;
  });
}

it('a waiter whose subscription came after its join gave up still hears the release: it is not dropped from the queue', async () => {
  const held = await holder.acquire('k', { ttl: 60_000 });
  const commandTimeout = 300;
  // Polls once a minute: only the release message can hand it the lock within the test.
  const locker = createLocker({ redis: waiterRedis, commandTimeout, retry: SLOW_POLL });
  const scripts = countScripts(waiterRedis);
  const refused = firstScriptAnswered(waiterRedis);
  const waiting = locker.acquire('k', { wait: 30_000 });
  await refused;
  // The join gives up `commandTimeout` after that answer, on a timer of this process: one due
  // later fires after it (the margin covers the steps between the answer and the join).
  await new Promise((resolve) => setTimeout(resolve, 2 * commandTimeout));
  await untilQueued(direct, 'k', 1);
  expect(joins).toEqual({ sent: 1, unanswered: 1 });
  const attempts = scripts();
  subscriberLink.pass();
  await until(async () => joins.unanswered === 0, 'the join answered');
  // A join still waiting would have gone on at once to the next attempt: this one had given up,
  // and sleeps until the next poll (a minute away) or a release message.
  expect(scripts()).toBe(attempts);
  await waitFor(
    'the waiter to subscribe',
    async () => ((await direct.pubsub('NUMSUB', CHANNEL)) as [string, number])[1] > 0,
  );
  await held.release();
  const lock = await within(
    waiting,
    10_000,
    'the release to hand the lock over (the next poll is a minute away)',
  );
  await lock.release();
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
    const settledWith: (typeof joins)[] = [];
    const { error, ms } = await settleAfter(
      () => controller.abort(),
      waiting.finally(() => settledWith.push({ ...joins })),
    );
    expect(error).toMatchObject({ name: 'AbortError' });
    // The attempt is answered after the pause; the join after it would give up after half a minute.
    // It settled with no join sent, and at once.
    expect(settledWith).toEqual([{ sent: 0, unanswered: 0 }]);
    expect(ms).toBeLessThan(AT_ONCE_MS);
    await held.release();
    await locker.close();
  },
  TEST_TIMEOUT,
);
