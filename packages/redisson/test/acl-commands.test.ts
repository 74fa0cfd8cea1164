import { randomUUID } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { type ExtendEvent, type LostEvent, NotOwnerError } from '@lock/core';
import { aclUser, type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRedisson,
  FairLockProtocol,
  FencedLockProtocol,
  ReadLockProtocol,
  type Redisson,
  type RLock,
  RLockProtocol,
  WriteLockProtocol,
} from '../src/index.js';

/**
 * S27: the README's "Commands needed (ACL)" table, read from the README itself: lock kind (the
 * getters of its row) → the commands an ACL user needs for it.
 */
function readmeCommands(): Map<string, string[]> {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const section = readme.split('\n## Commands needed (ACL)\n')[1]?.split('\n## ')[0] ?? '';
  const rows = [...section.matchAll(/^\| (.+?) \| `([a-z| ]+)` \|$/gm)];
  return new Map(rows.map(([, kinds, commands]) => [kinds!, commands!.split(' ')]));
}

/**
 * The watchdog lease of the test's clients, renewed every 800 ms: a renewal round may come up to
 * 1.6 s late (a stalled worker on a loaded host) before the lease runs out.
 */
const LEASE = 2_400;
/** The waiter polls this rarely: within a test, only the unlock message can wake it in time. */
const SLOW_POLL = { base: 10_000, max: 10_000, jitter: 0 };
/** How long the woken waiter may wait for the lock; without the message it finds it only at its wait's end. */
const WAITER_WAIT = 5_000;
/**
 * Woken by the unlock message, the waiter takes the lock in one more attempt, a round trip the
 * README bounds by `commandTimeout` (500 ms); 1.5 s more for a stalled worker. Without the
 * message (no `subscribe`) its next attempt comes only at the end of its wait, which starts
 * before the holder's unlock: more than 4 s after it, given the 300 ms wait that gives up first.
 */
const WOKEN_WITHIN = 500 + 1_500;
/** Redis's refusal of a command a script calls: 7.0's wording, then 7.2's. */
const SCRIPT_REFUSAL = "(ERR The user executing the script can't run this command|ERR ACL failure in script)";

/**
 * A fair-lock waiter that gives up leaves the queue by an `EVAL` calling these: refused, it fails
 * silently (README), and the waiter behind it, queued behind a ghost, never gets the lock. (It
 * calls `lrem` too, which a partial unlock, earlier in the exercise, is refused first.)
 */
const LEAVES_QUEUE = ['eval', 'zincrby'];

/**
 * The failure of an operation once `command` is taken out: a step, then Redis's refusal (NOPERM
 * naming the command when the client sends it, or the client's own before writing; the script
 * refusal when a script calls it). Without `subscribe`, the waiter is not woken by the unlock
 * message in time; without a command a fair waiter leaves the queue by, the one behind it never
 * gets the lock.
 */
function refusal(command: string, queued: boolean): RegExp {
  if (command === 'subscribe') return /^waiter: woken by the unlock message/;
  if (queued && LEAVES_QUEUE.includes(command)) return /^waiter: got the lock after the unlock/;
  return new RegExp(`^[\\w -]+: (NOPERM .*\\b${command}\\b|${SCRIPT_REFUSAL})`, 'i');
}

/** Runs `step`, naming it in the error it fails with. */
async function step<T>(name: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw new Error(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Resolves after `count` watchdog renewals of `key` that succeeded; rejects once `key` is lost (a
 * refused renewal is retried until the lease runs out). Both are told per key: the cases run
 * side by side, and another case's refused renewal is not this one's.
 */
function renewals(count: number, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    const settle = (outcome: () => void) => {
      unsubscribe('lock:extend', onExtend);
      unsubscribe('lock:lost', onLost);
      outcome();
    };
    const onExtend = (message: unknown) => {
      const event = message as ExtendEvent;
      if (event.renewal && event.key === key && ++seen === count) settle(resolve);
    };
    const onLost = (message: unknown) => {
      const event = message as LostEvent;
      if (event.key === key) settle(() => reject(new Error(`lost (${event.reason}) after ${seen} renewals`)));
    };
    subscribe('lock:extend', onExtend);
    subscribe('lock:lost', onLost);
  });
}

/** One way to hold a name and one to wait for it (a reader waits for a writer, and the other way round). */
interface Pair {
  readonly holds: (redisson: Redisson, name: string) => RLock;
  readonly waits: (redisson: Redisson, name: string) => RLock;
  /** Where its waiters queue, when they do: the waiter that gives up must be ahead of the other. */
  readonly queue?: (name: string) => string;
  /** Whether a second holder of the same kind gets in beside the first (a second reader). */
  readonly shares?: boolean;
  /** Grants whose replies came too late given back, as the engine does (called here directly). */
  readonly lateGrants: (redis: Redis, name: string) => Promise<void>;
}

/**
 * `protocol`'s undo of a late re-entry (one hold taken off, its latch out of the list) and of a
 * late first hold (the lock freed, with the unlock message).
 */
function undoes(protocol: () => Pick<RLockProtocol, 'acquire' | 'undo'>) {
  return async (redis: Redis, name: string) => {
    const undo = protocol();
    const owner = `${randomUUID()}:1`;
    for (const attempt of ['first', 'late'])
      expect((await undo.acquire(redis, name, owner, 10_000, { wait: 0, attempt })).acquired).toBe(true);
    expect(await undo.undo(redis, name, owner, '10000', 'late')).toBe('held');
    expect(await undo.undo(redis, name, owner, '10000', 'first')).toBe('released');
  };
}

/**
 * A fair grant given back late while another waiter is queued: the turn is kept for the owner
 * (its marker ends in the server's TIME), and the same thread re-enters through an RLock handle
 * meanwhile (the marker stays the list's last).
 */
async function keptTurn(redis: Redis, name: string): Promise<void> {
  const fair = new FairLockProtocol();
  const [owner, other] = [`${randomUUID()}:1`, `${randomUUID()}:1`];
  const waiting = { wait: 5_000, queueLease: 2_000 };
  expect((await fair.acquire(redis, name, owner, 10_000, { ...waiting, attempt: 'kept' })).acquired).toBe(
    true,
  );
  expect((await fair.acquire(redis, name, other, 10_000, { ...waiting, attempt: 'queued' })).acquired).toBe(
    false,
  );
  expect(await fair.undo(redis, name, owner, '10000', 'kept', waiting)).toBe('held');
  expect(
    (await new RLockProtocol().acquire(redis, name, owner, 10_000, { wait: 0, attempt: 'rlock' })).acquired,
  ).toBe(true);
  expect(await fair.forceUnlock(redis, name)).toBe(true);
}

/** Each row of the README's table, and the lock pairs its operations are run with. */
const KINDS: Record<string, readonly Pair[]> = {
  '`getLock`, `getFencedLock`': [
    {
      holds: (r, n) => r.getLock(n),
      waits: (r, n) => r.getLock(n),
      lateGrants: undoes(() => new RLockProtocol()),
    },
    {
      holds: (r, n) => r.getFencedLock(n),
      waits: (r, n) => r.getFencedLock(n),
      lateGrants: undoes(() => new FencedLockProtocol()),
    },
  ],
  '`getFairLock`': [
    {
      holds: (r, n) => r.getFairLock(n),
      waits: (r, n) => r.getFairLock(n),
      queue: (n) => `redisson_lock_queue:{${n}}`,
      lateGrants: keptTurn,
    },
  ],
  '`getReadWriteLock`': [
    {
      holds: (r, n) => r.getReadWriteLock(n).writeLock(),
      waits: (r, n) => r.getReadWriteLock(n).readLock(),
      lateGrants: undoes(() => new WriteLockProtocol()),
    },
    {
      holds: (r, n) => r.getReadWriteLock(n).readLock(),
      waits: (r, n) => r.getReadWriteLock(n).writeLock(),
      shares: true,
      lateGrants: undoes(() => new ReadLockProtocol()),
    },
  ],
};

/**
 * Every operation of one pair, as the ACL user: lock (watchdog lease), re-entry, hold count,
 * isLocked, remaining TTL, a second client's tryLock of each kind of the pair (a second reader
 * gets in and leaves), a watchdog renewal, a partial and a last unlock; under a
 * long lease, a waiter giving up ahead of another (the fair lock leaves its queue), and that
 * other woken by the unlock message (it polls far too rarely to find the lock otherwise);
 * forceUnlock; and grants whose replies came too late given back.
 */
async function exercise(server: RedisServer, pair: Pair, name: string, username: string): Promise<void> {
  const admin = server.client();
  const clients = [admin];
  const user = () => {
    const redis = server.client({ username, password: 'pw' });
    clients.push(redis);
    return redis;
  };
  const a = createRedisson({ redis: user(), lockWatchdogTimeout: LEASE });
  const b = createRedisson({ redis: user(), lockWatchdogTimeout: LEASE, retry: SLOW_POLL });
  try {
    const held = pair.holds(a, name);
    await step('lock', () => held.lock({ threadId: 1 }));
    await step('re-entry', () => held.lock({ threadId: 1 }));
    expect(await step('getHoldCount', () => held.getHoldCount({ threadId: 1 }))).toBe(2);
    expect(await step('isLocked', () => held.isLocked())).toBe(true);
    expect(await step('remainTimeToLive', () => held.remainTimeToLive())).toBeGreaterThan(0);
    expect(await step('refused tryLock', () => pair.waits(b, name).tryLock({ threadId: 1 }))).toBe(false);
    const second = pair.holds(b, name);
    // A second reader shares the name with the first; any other second holder is refused.
    const shares = pair.shares ?? false;
    expect(await step('second holder', () => second.tryLock({ threadId: 1 }))).toBe(shares);
    const secondUnlock = () => step('second holder unlock', () => second.unlock({ threadId: 1 }));
    // Refused, it holds nothing: the client refuses its unlock before Redis.
    await (shares ? secondUnlock() : expect(second.unlock({ threadId: 1 })).rejects.toThrow(NotOwnerError));
    await step('renewal', () => renewals(1, name));
    await step('partial unlock', () => held.unlock({ threadId: 1 }));
    await step('last unlock', () => held.unlock({ threadId: 1 }));

    await step('lock with a lease', () => held.lock({ threadId: 1, lease: 10_000 }));
    const givingUp = step('given-up wait', () => pair.waits(b, name).tryLock({ threadId: 3, wait: 300 }));
    let settled = false;
    givingUp.then(
      () => (settled = true),
      () => (settled = true),
    );
    const queue = pair.queue?.(name);
    // Queued, or refused before it could queue (its error is the one to report).
    if (queue) {
      const queued = async () => settled || (await admin.llen(queue)) === 1;
      await waitFor('the first waiter queued', queued, { timeout: 5_000 });
    }
    const waiting = step('waiter', () => pair.waits(b, name).tryLock({ threadId: 2, wait: WAITER_WAIT }));
    waiting.catch(() => {});
    expect(await givingUp).toBe(false);
    await step('unlock', () => held.unlock({ threadId: 1 }));
    const unlockedAt = performance.now();
    expect(await waiting, 'waiter: got the lock after the unlock').toBe(true);
    expect(performance.now() - unlockedAt, 'waiter: woken by the unlock message').toBeLessThanOrEqual(
      WOKEN_WITHIN,
    );
    await step('waiter unlock', () => pair.waits(b, name).unlock({ threadId: 2 }));

    await step('lock again', () => held.lock({ threadId: 1, lease: 10_000 }));
    expect(await step('forceUnlock', () => held.forceUnlock())).toBe(true);

    await step('late grants', () => pair.lateGrants(user(), name));
  } finally {
    await a.shutdown();
    await b.shutdown();
    for (const redis of clients) redis.disconnect();
  }
}

describe('S27: an ACL user with exactly the README list of a lock kind', () => {
  const table = readmeCommands();
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = server.client();
  });
  afterAll(() => server.stop());

  const grant = (name: string, commands: readonly string[]) =>
    aclUser(admin, { name, password: 'pw', reset: true, keys: ['*'], channels: ['*'], commands });

  it('the README lists every lock kind', () => {
    expect([...table.keys()]).toEqual(Object.keys(KINDS));
  });

  // The cases without one command run side by side (about 1 s each, mostly timers: the watchdog's
  // renewal, the given-up wait), each as a user and on names of its own.
  describe.each(Object.entries(KINDS).map(([kind, pairs], k) => ({ kind, pairs, k })))(
    '$kind',
    ({ kind, pairs, k }) => {
      const commands = table.get(kind) ?? [];

      it('locks, waits, renews and unlocks with the list', async () => {
        await grant(`locker-${k}`, commands);
        for (const [i, pair] of pairs.entries()) await exercise(server, pair, `acl-${k}:${i}`, `locker-${k}`);
      }, 30_000);

      it.concurrent.each(commands)(
        'fails without %s',
        async (command) => {
          const user = `locker-${k}-no-${command}`;
          await grant(
            user,
            commands.filter((c) => c !== command),
          );
          const failures = await Promise.all(
            pairs.map((pair, i) =>
              exercise(server, pair, `acl-${k}-no-${command}:${i}`, user).then(
                () => 'succeeded',
                (error: Error) => error.message,
              ),
            ),
          );
          expect(failures).toContainEqual(
            expect.stringMatching(
              refusal(
                command,
                pairs.some((pair) => pair.queue),
              ),
            ),
          );
        },
        30_000,
      );
    },
  );
});
