import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type AcquireEvent, DEFAULT_COMMAND_TIMEOUT, DEFAULT_RETRY } from '@lock/core';
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
import { createRedisson, type Redisson, type RLock } from '../src/index.js';

/** The waiters' wait: far past the bound below, far short of the holder's lease. */
const WAIT = 20_000;
const HOLDER_LEASE = 60_000;
const FOUND_WITHIN = lostMessageBound(DEFAULT_RETRY.max, DEFAULT_COMMAND_TIMEOUT);
const WAITERS = 3;

/** How many subscriptions the server counts on the channels matching `pattern`. */
async function subscribers(admin: Redis, pattern: string): Promise<number> {
  const channels = (await admin.pubsub('CHANNELS', pattern)) as string[];
  if (channels.length === 0) return 0;
  const counts = (await admin.pubsub('NUMSUB', ...channels)) as (string | number)[];
  return counts.filter((_, i) => i % 2 === 1).reduce<number>((sum, count) => sum + Number(count), 0);
}

/**
 * S30: waiters that rely on Redisson's unlock messages, each in a client of its own (as waiters
 * in separate JVMs or processes are: none is woken in-process), whose subscriber connections run
 * through a link the test cuts before the holder unlocks: dropped (the connections closed and
 * every reconnection refused: the server unsubscribes them) or partitioned (blackholed: the
 * server still counts them, so the unlock publishes to them and the message never arrives). Each
 * waiter must still take the lock by polling, within the README's bound of the previous unlock,
 * with no more attempts than backoff polling sends, and never two at once.
 */
describe('S30: Redisson waiters whose unlock message is lost still acquire by polling', () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = server.client();
  });
  afterAll(() => server.stop());

  const kinds: [
    kind: string,
    lock: (redisson: Redisson, name: string) => RLock,
    channels: (name: string) => string,
  ][] = [
    ['RLock', (redisson, name) => redisson.getLock(name), (name) => `redisson_lock__channel:{${name}}`],
    // A fair unlock wakes only the head of the queue, on a channel of its own.
    [
      'fair lock',
      (redisson, name) => redisson.getFairLock(name),
      (name) => `redisson_lock__channel:{${name}}:*`,
    ],
    [
      'write lock',
      (redisson, name) => redisson.getReadWriteLock(name).writeLock(),
      (name) => `redisson_rwlock:{${name}}`,
    ],
  ];
  const faults: [fault: string, cut: (link: TcpProxy) => void, gone: number][] = [
    ['dropped', (link) => link.drop(), 0],
    ['partitioned', (link) => link.blackhole(), WAITERS],
  ];
  const cases = kinds.flatMap(([kind, make, channels]) =>
    faults.map(([fault, cut, gone]) => [kind, fault, make, channels, cut, gone] as const),
  );

  it.each(cases)(
    '%s, subscriber connections %s at the unlock',
    async (kind, fault, make, channels, cut, gone) => {
      const name = `s30:${kind}:${fault}`;
      await using link = await startProxy({ target: server });
      const holderClient = createRedisson({ redis: server.client() });
      const waiterClients = Array.from({ length: WAITERS }, () => {
        const redis = server.client();
        // The subscriber connection is a duplicate of the client: it alone goes through the link.
        redis.duplicate = (override) => new Redis({ ...redis.options, ...override, ...link.redisOptions });
        return createRedisson({ redis });
      });
      const events: AcquireEvent[] = [];
      const onAcquire = (message: unknown) => {
        const event = message as AcquireEvent;
        if (event.key === name) events.push(event);
      };
      const releasedAt: number[] = [];
      const acquiredAt: number[] = [];
      let inside = 0;
      let mostInside = 0;
      try {
        const holder = make(holderClient, name);
        await holder.lock({ threadId: 1, lease: HOLDER_LEASE });
        subscribe('lock:acquire', onAcquire);
        const outcomes = waiterClients.map((redisson) =>
          redisson.run(async () => {
            const lock = make(redisson, name);
            if (!(await lock.tryLock({ wait: WAIT }))) return 'timed out';
            acquiredAt.push(performance.now());
            inside += 1;
            mostInside = Math.max(mostInside, inside);
            await new Promise((resolve) => setTimeout(resolve, 50));
            inside -= 1;
            await lock.unlock();
            releasedAt.push(performance.now());
            return 'acquired';
          }),
        );
        await waitFor(
          'every waiter subscribed',
          async () => (await subscribers(admin, channels(name))) === WAITERS,
        );
        // Let the waiters' backoff grow to retry.max: the case where a lost message costs most.
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        cut(link);
        await waitFor(
          `the server to count ${gone} subscriptions`,
          async () => (await subscribers(admin, channels(name))) === gone,
        );
        // Taken as the unlock is sent: the waiters' delays are measured from before it lands.
        releasedAt.push(performance.now());
        await holder.unlock({ threadId: 1 });

        expect(await Promise.all(outcomes)).toEqual(Array(WAITERS).fill('acquired'));
        expect(mostInside).toBe(1);
        // The i-th acquisition follows the i-th unlock (the holder's, then each waiter's).
        const delays = acquiredAt.map((at, i) => Math.round(at - releasedAt[i]!));
        expect(Math.max(...delays), `acquired ${delays.join(', ')} ms after each unlock`).toBeLessThanOrEqual(
          FOUND_WITHIN,
        );
        expect(events).toHaveLength(WAITERS);
        const busy = events
          .filter(({ waited, attempts }) => attempts > pollingAttemptsBound(DEFAULT_RETRY, waited))
          .map(({ waited, attempts }) => ({ waited: Math.round(waited), attempts }));
        expect(busy).toEqual([]);
      } finally {
        unsubscribe('lock:acquire', onAcquire);
        await holderClient.shutdown();
        await Promise.all(waiterClients.map((redisson) => redisson.shutdown()));
      }
    },
    60_000,
  );
});
