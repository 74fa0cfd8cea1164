import { AcquireTimeoutError, createLocker, type LockProtocol } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createRedisson,
  FairLockProtocol,
  type LockOptions,
  type Redisson,
  type RedissonOptions,
  RLockProtocol,
  type TryLockOptions,
} from '../src/index.js';
import { dump } from './helpers/observe.js';

/**
 * `retry.attempts` given to `createRedisson` (core's "Attempt limit"): one call sends that many
 * attempts and no more, whatever its wait, `lock()`'s unbounded one included. Each attempt is
 * one EVALSHA (a refused try loads the waiter's script first), a fair waiter's give-up one EVAL,
 * and the holder takes a fixed lease, so no watchdog sends anything meanwhile.
 */
const LIMIT = 3;
/** Short polls: bounded by the wait alone, a call would send far more than `LIMIT` attempts. */
const RETRY = { base: 20, max: 100, attempts: LIMIT };
const LEASE = 60_000;
const HOLDER = { lease: LEASE, threadId: 1 };
const WAITER = 7;
/** Ends a waiting call that ignored the limit, for the test to fail on its error rather than hang. */
const GUARD_MS = 5_000;

let server: RedisServer;
let admin: Redis;
beforeAll(async () => {
  server = await startRedis();
  admin = server.client();
});
afterAll(() => server.stop());
beforeEach(() => admin.flushall());

/** Calls of `command` the server ran so far, from `INFO commandstats`. */
async function calls(command: string): Promise<number> {
  const stats = await admin.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

/** The scripts the server runs from now on: `attempts` (EVALSHA) and `whole` (EVAL). */
async function countScripts(): Promise<() => Promise<{ attempts: number; whole: number }>> {
  const [evalsha, evalWhole] = [await calls('evalsha'), await calls('eval')];
  return async () => ({
    attempts: (await calls('evalsha')) - evalsha,
    whole: (await calls('eval')) - evalWhole,
  });
}

/** Every key with its type and value, not its PTTL (which runs down meanwhile). */
async function keys(): Promise<Record<string, { type: string; value: unknown }>> {
  return Object.fromEntries(
    Object.entries(await dump(admin)).map(([key, { type, value }]) => [key, { type, value }]),
  );
}

/** What a failed call failed with; a call that took the lock fails the test. */
const failure = (call: Promise<unknown>) =>
  call.then(
    () => new Error('took a held lock'),
    (error: unknown) => error,
  );

function expectAttemptLimit(error: unknown, name: string): void {
  expect(error).toBeInstanceOf(AcquireTimeoutError);
  const timeout = error as AcquireTimeoutError;
  expect({ limit: timeout.limit, attempts: timeout.attempts }).toEqual({
    limit: 'attempts',
    attempts: LIMIT,
  });
  expect(timeout.message).toMatch(
    new RegExp(
      `^gave up on lock "${name}" after ${LIMIT} attempts \\(the retry\\.attempts limit\\) and \\d+ ms$`,
    ),
  );
}

/** A lock kind's blocking `lock()`, its `tryLock()`, and its holder's `unlock()`, on `name`. */
interface Kind {
  readonly kind: string;
  /** Whether a waiting call queues in Redis (`redisson_lock_queue:{name}`), and leaves it with one EVAL. */
  readonly queues: boolean;
  hold(client: Redisson, name: string): Promise<unknown>;
  lock(client: Redisson, name: string, options: LockOptions): Promise<unknown>;
  tryLock(client: Redisson, name: string, options: TryLockOptions): Promise<boolean>;
  unlock(client: Redisson, name: string): Promise<void>;
  isLocked(client: Redisson, name: string): Promise<boolean>;
}

const rlock = (getLock: (client: Redisson, name: string) => ReturnType<Redisson['getLock']>) => ({
  hold: (client: Redisson, name: string) => getLock(client, name).lock(HOLDER),
  lock: (client: Redisson, name: string, options: LockOptions) => getLock(client, name).lock(options),
  tryLock: (client: Redisson, name: string, options: TryLockOptions) =>
    getLock(client, name).tryLock(options),
  unlock: (client: Redisson, name: string) => getLock(client, name).unlock({ threadId: 1 }),
  isLocked: (client: Redisson, name: string) => getLock(client, name).isLocked(),
});

const writeLock = (client: Redisson, name: string) => client.getReadWriteLock(name).writeLock();

const KINDS: Kind[] = [
  { kind: 'RLock', queues: false, ...rlock((client, name) => client.getLock(name)) },
  { kind: 'RFairLock', queues: true, ...rlock((client, name) => client.getFairLock(name)) },
  { kind: 'write lock', queues: false, ...rlock(writeLock) },
  {
    kind: 'read lock behind a writer',
    queues: false,
    ...rlock(writeLock),
    lock: (client, name, options) => client.getReadWriteLock(name).readLock().lock(options),
    tryLock: (client, name, options) => client.getReadWriteLock(name).readLock().tryLock(options),
  },
  {
    kind: 'RFencedLock',
    queues: false,
    ...rlock((client, name) => client.getFencedLock(name)),
    lock: (client, name, options) => client.getFencedLock(name).lockAndGetToken(options),
    tryLock: async (client, name, options) =>
      (await client.getFencedLock(name).tryLockAndGetToken(options)) !== null,
  },
];

/** A holder client, and a waiter client with the attempt limit, each on its own connection. */
async function clients(waiterOptions: Partial<RedissonOptions> = {}) {
  const holder = createRedisson({ redis: server.client() });
  const waiter = createRedisson({ redis: server.client(), retry: RETRY, ...waiterOptions });
  return {
    holder,
    waiter,
    async [Symbol.asyncDispose]() {
      await Promise.all([holder.shutdown(), waiter.shutdown()]);
    },
  };
}

/**
 * The holder takes `name`, then the waiter's one try, refused, loads its acquire script (the read
 * lock's is new to the server), so that from here each attempt is one EVALSHA. Answers the keys.
 */
async function block(kind: Kind, both: Awaited<ReturnType<typeof clients>>, name: string) {
  await kind.hold(both.holder, name);
  expect(await kind.tryLock(both.waiter, name, { threadId: WAITER })).toBe(false);
  return keys();
}

describe.each(KINDS)('retry.attempts on the $kind', (kind) => {
  it(`lock() sends exactly ${LIMIT} attempts and rejects with AcquireTimeoutError, leaving the holder and the keys as they were`, async () => {
    const name = `${kind.kind}:lock`;
    await using both = await clients();
    const before = await block(kind, both, name);
    const sent = await countScripts();
    const error = await failure(
      kind.lock(both.waiter, name, { threadId: WAITER, signal: AbortSignal.timeout(GUARD_MS) }),
    );
    const scripts = await sent();
    expectAttemptLimit(error, name);
    // Nothing left behind (no queue entry, no latch) and nothing of the holder's changed.
    expect(await keys()).toEqual(before);
    expect(scripts).toEqual({ attempts: LIMIT, whole: kind.queues ? 1 : 0 });
    expect(await admin.pttl(name)).toBeGreaterThan(LEASE - GUARD_MS);
    await kind.unlock(both.holder, name);
    expect(await kind.isLocked(both.holder, name)).toBe(false);
  });

  it(`tryLock({ wait }) answers false after exactly ${LIMIT} attempts, long before its wait; tryLock() sends one`, async () => {
    const name = `${kind.kind}:tryLock`;
    await using both = await clients();
    const before = await block(kind, both, name);
    const sent = await countScripts();
    const started = performance.now();
    expect(await kind.tryLock(both.waiter, name, { threadId: WAITER, wait: GUARD_MS })).toBe(false);
    expect(await sent()).toEqual({ attempts: LIMIT, whole: kind.queues ? 1 : 0 });
    expect(performance.now() - started).toBeLessThan(GUARD_MS);
    const once = await countScripts();
    expect(await kind.tryLock(both.waiter, name, { threadId: WAITER })).toBe(false);
    expect(await once()).toEqual({ attempts: 1, whole: 0 });
    expect(await keys()).toEqual(before);
    await kind.unlock(both.holder, name);
    expect(await kind.isLocked(both.holder, name)).toBe(false);
  });
});

describe('retry.attempts on the fair lock queue', () => {
  const name = 'fair-queue';
  const queue = `redisson_lock_queue:{${name}}`;
  const deadlines = `redisson_lock_timeout:{${name}}`;

  it('a lock() waiter that reaches the limit leaves the queue; the waiter behind it moves up and is served', async () => {
    // Polls 3 s apart: the second waiter queues behind the first long before its last attempt,
    // however slow the host.
    await using both = await clients({ retry: { base: 3_000, max: 3_000, jitter: 0, attempts: LIMIT } });
    const behind = createRedisson({ redis: server.client() });
    try {
      await both.holder.getFairLock(name).lock(HOLDER);
      const limited = failure(
        both.waiter.getFairLock(name).lock({ threadId: WAITER, signal: AbortSignal.timeout(3 * GUARD_MS) }),
      );
      await waitFor('the first waiter queued', async () => (await admin.llen(queue)) === 1, { interval: 5 });
      const served = behind.getFairLock(name).lock({ threadId: 1 });
      // Awaited below; a test failing before that ends it by shutdown(), which rejects it.
      served.catch(() => {});
      await waitFor('the second waiter queued', async () => (await admin.llen(queue)) === 2, { interval: 5 });
      const [first, second] = [`${both.waiter.id}:${WAITER}`, `${behind.id}:1`];
      expect(await admin.lrange(queue, 0, -1)).toEqual([first, second]);
      const deadline = Number(await admin.zscore(deadlines, second));

      expectAttemptLimit(await limited, name);
      expect(await admin.lrange(queue, 0, -1)).toEqual([second]);
      // Redisson's acquireFailedAsync: everyone behind moves one allowance (fairLockWaitTimeout) closer.
      expect(await admin.zrange(deadlines, '0', '-1', 'WITHSCORES')).toEqual([
        second,
        String(deadline - 300_000),
      ]);
      expect(await admin.hgetall(name)).toEqual({ [`${both.holder.id}:1`]: '1' });

      await both.holder.getFairLock(name).unlock({ threadId: 1 });
      await served;
      expect(await admin.hgetall(name)).toEqual({ [second]: '1' });
      expect(await admin.exists(queue, deadlines)).toBe(0);
      await behind.getFairLock(name).unlock({ threadId: 1 });
    } finally {
      await behind.shutdown();
    }
  }, 30_000);
});

describe("retry.attempts with pubSub: 'poll' (createLocker over this package's protocols)", () => {
  const PROTOCOLS: [string, () => LockProtocol, boolean][] = [
    ['RLockProtocol', () => new RLockProtocol(), false],
    ['FairLockProtocol', () => new FairLockProtocol(), true],
  ];

  it.each(PROTOCOLS)(
    `%s: an unbounded wait sends exactly ${LIMIT} attempts, then rejects, leaving nothing behind`,
    async (_, protocol, queues) => {
      const name = 'polled';
      await using both = await clients();
      const redis = server.client();
      const poller = createLocker({ redis, protocol: protocol(), prefix: '', pubSub: 'poll', retry: RETRY });
      try {
        const getLock = queues ? both.holder.getFairLock(name) : both.holder.getLock(name);
        await getLock.lock(HOLDER);
        // Loads the acquire script, as `block` does.
        expect(await poller.tryAcquire(name)).toBeNull();
        const before = await keys();
        const subscribes = await calls('subscribe');
        const sent = await countScripts();
        const error = await failure(
          poller.acquire(name, { wait: Number.POSITIVE_INFINITY, signal: AbortSignal.timeout(GUARD_MS) }),
        );
        expectAttemptLimit(error, name);
        const scripts = await sent();
        expect(await keys()).toEqual(before);
        expect(scripts).toEqual({ attempts: LIMIT, whole: queues ? 1 : 0 });
        await getLock.unlock({ threadId: 1 });
        expect(await getLock.isLocked()).toBe(false);
        // It never listened: a poller's waiters retry on the backoff alone.
        expect(await calls('subscribe')).toBe(subscribes);
      } finally {
        await poller.close();
        redis.disconnect();
      }
    },
  );

  it("createRedisson refuses 'poll', naming createLocker's, before anything is written", async () => {
    expect(() => createRedisson({ redis: admin, pubSub: 'poll' as never })).toThrow(
      `invalid option "pubSub": "poll" (expected 'auto', 'sharded' or 'plain'; 'poll' is createLocker's: a Redisson client's waiters listen for unlocks, as Java's do)`,
    );
    expect(await admin.dbsize()).toBe(0);
  });
});
