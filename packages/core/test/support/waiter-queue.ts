import { createLocker } from '@lock/core';
import type { Redis } from 'ioredis';
import { startHolder } from '../faults/support/processes.js';

/** Polls once a minute: within a test, only a release message can wake its waiters. */
export const SLOW_POLL = { base: 60_000, max: 60_000, jitter: 0 };

/**
 * The registrations of the owners queued on the token lock `lock:<key>`: owner → server ms until
 * which it counts as waiting (the NUL-prefixed grant terms and STX-prefixed inboxes left out).
 */
export async function registrations(redis: Redis, key: string): Promise<Record<string, number>> {
  const fields = await redis.hgetall(`{lock:${key}}:waiters`);
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([field]) => !field.startsWith('\0') && !field.startsWith('\u0002'))
      .map(([owner, until]) => [owner, Number(until)]),
  );
}

/**
 * Counts the scripts `redis` sends from now on (each lock attempt and release is one `EVALSHA`):
 * a test can tell when a waiter has sent an attempt, or that it sent none; `answered()` counts
 * those answered (or failed), so a test can tell a waiter with no attempt in flight.
 */
export function countScripts(redis: Redis): (() => number) & { answered(): number } {
  let sent = 0;
  let answered = 0;
  const evalsha = redis.evalsha.bind(redis);
  redis.evalsha = ((...args: Parameters<typeof evalsha>) => {
    sent += 1;
    const reply = evalsha(...args);
    const settled = () => {
      answered += 1;
    };
    reply.then(settled, settled);
    return reply;
  }) as typeof evalsha;
  return Object.assign(() => sent, { answered: () => answered });
}

/**
 * Records when `redis` sends each script whose first key is `lockKey` (a waiter's attempts, until
 * it holds the lock), under the waiter `waiterOf` names from the script's arguments (the owner
 * is the first with the token format; by default, one waiter per client).
 */
export function attemptTimes(
  redis: Redis,
  lockKey: string,
  waiterOf: (argv: string[]) => string = () => 'waiter',
): Map<string, number[]> {
  const times = new Map<string, number[]>();
  const evalsha = redis.evalsha.bind(redis);
  redis.evalsha = ((...args: Parameters<typeof evalsha>) => {
    const [, keyCount, ...rest] = args.map(String);
    if (rest[0] === lockKey) {
      const waiter = waiterOf(rest.slice(Number(keyCount)));
      times.set(waiter, [...(times.get(waiter) ?? []), performance.now()]);
    }
    return evalsha(...args);
  }) as typeof evalsha;
  return times;
}

/**
 * Whether a waiter that sent attempts at `times` sleeps at `retry.max` now: it sent `atMaxFrom`
 * attempts at least (the one after which its backoff's ceiling is `retry.max`, and one more), and
 * its last sleep lasted at least what jitter leaves of `retry.max`, so it did grow.
 */
export function sleepsAtMax(
  times: readonly number[],
  retry: { max: number; jitter: number },
  atMaxFrom: number,
): boolean {
  const [before, last] = times.slice(-2);
  return times.length >= atMaxFrom && last! - before! >= retry.max * (1 - retry.jitter);
}

/** Polls `check` every 5 ms until it holds, failing after 10 s with `what`. */
export async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const end = performance.now() + 10_000;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Resolves once `count` owners are queued on `lock:<key>`. */
export function untilQueued(redis: Redis, key: string, count: number): Promise<void> {
  return until(
    async () => Object.keys(await registrations(redis, key)).length >= count,
    `${count} waiters queued on ${key}`,
  );
}

/** Resolves once `count` connections subscribe to `channel`. */
export function untilSubscribed(redis: Redis, channel: string, count: number): Promise<void> {
  return until(
    async () => Number(((await redis.pubsub('NUMSUB', channel)) as [string, number])[1]) >= count,
    `${count} subscribers on ${channel}`,
  );
}

/**
 * A holder (a locker of its own on `redis`) takes `lock:<key>` for 30 s, and a waiter process
 * (a renewing locker with a 30 s ttl) queues behind it and is killed. Answers the holder, its
 * lock, the dead waiter's owner and its process (kill it again in a `finally`).
 */
export async function queueCrashedWaiter(redis: Redis, url: string, key: string) {
  const holder = createLocker({ redis });
  const first = await holder.acquire(key, { ttl: 30_000 });
  const crashed = startHolder({ url, key, ttl: 30_000, wait: 30_000 });
  await crashed.line((line) => line === 'ready');
  await untilQueued(redis, key, 1);
  const [dead] = Object.keys(await registrations(redis, key));
  crashed.child.kill('SIGKILL');
  return { holder, first, dead: dead!, crashed };
}

/**
 * Subscribes `redis` (a connection of its own) to `channel`, and to the lockers' inboxes, where a
 * release publishes what it has for one waiter framed with its lock's channel: answers the
 * messages published for `channel` on either, unframed, as they come.
 */
export async function listen(redis: Redis, channel: string): Promise<string[]> {
  const messages: string[] = [];
  const frame = `${Buffer.byteLength(channel)}:${channel}`;
  redis.on('message', (_channel: string, message: string) => messages.push(message));
  redis.on('pmessage', (_pattern: string, _inbox: string, message: string) => {
    if (message.startsWith(frame)) messages.push(message.slice(frame.length));
  });
  await redis.subscribe(channel);
  await redis.psubscribe('*:inbox:*');
  return messages;
}
