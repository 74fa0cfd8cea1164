import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type AcquireEvent,
  createLocker,
  DEFAULT_COMMAND_TIMEOUT,
  DEFAULT_RETRY,
  type LegacyUnit,
  legacyProtocol,
} from '@lock/core';
import {
  lostMessageBound,
  pollingAttemptsBound,
  type RedisServer,
  startProxy,
  startRedis,
  type TcpProxy,
  waitFor,
} from '@lock/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkHistory, type Interval } from '../support/history.js';
import { attemptTimes, sleepsAtMax } from '../support/waiter-queue.js';

/** The waiters' wait: far past the bound below, far short of the holder's lease. */
const WAIT = 20_000;
const HOLDER_LEASE = 60_000;
/**
 * `lostMessageBound` (the README's bound). Nothing legacy-specific adds to it: a key with a TTL is
 * never taken over whatever its timestamp says, so the freed key is found at the next attempt in
 * either unit, and the holder's remaining TTL only ever shortens a sleep.
 */
const FOUND_WITHIN = lostMessageBound(DEFAULT_RETRY.max, DEFAULT_COMMAND_TIMEOUT);
const WAITERS = 3;
const HOLD = 50;
/**
 * The attempts a legacy waiter has sent once it sleeps at `retry.max`: the first refusal and the
 * retry at once after it subscribes, then one per sleep whose ceiling doubles from `retry.base`
 * until it is `retry.max`, and the one after that sleep.
 */
const AT_MAX_FROM = 2 + Math.ceil(Math.log2(DEFAULT_RETRY.max / DEFAULT_RETRY.base)) + 1;

async function subscribers(admin: Redis, channel: string): Promise<number> {
  return Number(((await admin.pubsub('NUMSUB', channel)) as [string, number])[1]);
}

/**
 * S30 for the legacy SETNX + GETSET format: waiters in lockers of their own (as waiters in
 * separate processes are: none is woken in-process), whose subscriber connections run through a
 * link the test cuts before the holder releases: dropped (the connections closed and every
 * reconnection refused: the server unsubscribes them) or partitioned (blackholed: the server
 * still counts them, so the release publishes to them and the message never arrives). In both
 * units (ms timestamps, and PHP's whole seconds, where the waiters' values can repeat within a
 * second), each waiter must still take the lock by polling, within the README's bound of the
 * previous release, with no more attempts than backoff polling sends, and never two at once.
 */
describe('S30: legacy waiters whose release message is lost still acquire by polling', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = server.client();
  });
  afterAll(() => server.stop());

  const units: LegacyUnit[] = ['ms', 's'];
  const faults: [fault: string, cut: (link: TcpProxy) => void, gone: number][] = [
    ['dropped', (link) => link.drop(), 0],
    ['partitioned', (link) => link.blackhole(), WAITERS],
  ];
  const cases = units.flatMap((unit) =>
    faults.map(([fault, cut, gone]) => [unit, fault, cut, gone] as const),
  );

  it.each(cases)(
    'unit %s, subscriber connections %s at the release',
    async (unit, fault, cut, gone) => {
      const name = `s30:${unit}:${fault}`;
      // The default prefix, so the lock is `lock:<name>`, and its side keys wrap it.
      const channel = `{lock:${name}}:released`;
      const protocol = legacyProtocol({ unit });
      await using link = await startProxy({ target: server });
      const holderLocker = createLocker({ redis: server.client(), protocol });
      const waiterAttempts: Map<string, number[]>[] = [];
      const waiterLockers = Array.from({ length: WAITERS }, () => {
        const redis = server.client();
        // The subscriber connections are duplicates of the client: they alone go through the link.
        redis.duplicate = (override) => new Redis({ ...redis.options, ...override, ...link.redisOptions });
        waiterAttempts.push(attemptTimes(redis, `lock:${name}`));
        return createLocker({ redis, protocol });
      });
      const events: AcquireEvent[] = [];
      const onAcquire = (message: unknown) => {
        const event = message as AcquireEvent;
        if (event.key === name) events.push(event);
      };
      const history: Interval[] = [];
      const releasedAt: number[] = [];
      const acquiredAt: number[] = [];
      try {
        const held = await holderLocker.acquire(name, { ttl: HOLDER_LEASE });
        const holderStart = process.hrtime.bigint();
        subscribe('lock:acquire', onAcquire);
        const outcomes = waiterLockers.map(async (locker, worker) => {
          const lock = await locker.acquire(name, { wait: WAIT });
          acquiredAt.push(performance.now());
          const start = process.hrtime.bigint();
          await new Promise((resolve) => setTimeout(resolve, HOLD));
          history.push({ worker, start, end: process.hrtime.bigint(), fence: lock.fence });
          releasedAt.push(performance.now());
          return lock.release();
        });
        await waitFor('every waiter subscribed', async () => (await subscribers(admin, channel)) === WAITERS);
        // Let the waiters' backoff grow to retry.max: the case where a lost message costs most.
        await waitFor(
          'every waiter sleeping at retry.max',
          async () =>
            waiterAttempts.every((attempts) =>
              sleepsAtMax(attempts.get('waiter') ?? [], DEFAULT_RETRY, AT_MAX_FROM),
            ),
          { timeout: 10_000, interval: 10 },
        );
        cut(link);
        await waitFor(
          `the server to count ${gone} subscriptions`,
          async () => (await subscribers(admin, channel)) === gone,
        );
        // Taken as the release is sent: the waiters' delays are measured from before it lands.
        history.push({ worker: -1, start: holderStart, end: process.hrtime.bigint(), fence: held.fence });
        releasedAt.push(performance.now());
        expect(await held.release()).toBe('released');

        expect(await Promise.all(outcomes)).toEqual(Array(WAITERS).fill('released'));
        expect(checkHistory(history)).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: WAITERS + 1 });
        // The i-th acquisition follows the i-th release (the holder's, then each waiter's).
        const delays = acquiredAt.map((at, i) => Math.round(at - releasedAt[i]!));
        expect(
          Math.max(...delays),
          `acquired ${delays.join(', ')} ms after each release`,
        ).toBeLessThanOrEqual(FOUND_WITHIN);
        expect(events).toHaveLength(WAITERS);
        const busy = events
          .filter(({ waited, attempts }) => attempts > pollingAttemptsBound(DEFAULT_RETRY, waited))
          .map(({ waited, attempts }) => ({ waited: Math.round(waited), attempts }));
        expect(busy).toEqual([]);
      } finally {
        unsubscribe('lock:acquire', onAcquire);
        await holderLocker.close();
        await Promise.all(waiterLockers.map((locker) => locker.close()));
      }
    },
    60_000,
  );
});
