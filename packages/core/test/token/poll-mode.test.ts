import { setTimeout as sleep } from 'node:timers/promises';
import {
  checkPubSub,
  createLocker,
  createRedlock,
  InvalidOptionError,
  type Lock,
  type Locker,
  type LockerOptions,
} from '@lock/core';
import { assertHistory, HistoryRecorder, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { callsBetween, commandCalls } from '../faults/support/stats.js';

/** Short polls, so that hand-offs by polling alone come quickly. */
const RETRY = { base: 5, max: 20 };

/** Subscriber connections the server has, and keys named like a waiter queue (`{<key>}:queue`, `{<key>}:waiters`). */
async function listeningState(admin: Redis): Promise<{ subscribers: number; queueKeys: string[] }> {
  const list = (await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
  const queueKeys = [...(await admin.keys('*:queue')), ...(await admin.keys('*:waiters'))];
  return { subscribers: list.split('\n').filter((line) => line.trim() !== '').length, queueKeys };
}

/** Samples `listeningState` until `done` settles; answers the largest subscriber count and every queue key seen. */
async function watchWhile(admin: Redis, done: Promise<unknown>) {
  let settled = false;
  const finished = done.finally(() => {
    settled = true;
  });
  let subscribers = 0;
  const queueKeys = new Set<string>();
  do {
    const state = await listeningState(admin);
    subscribers = Math.max(subscribers, state.subscribers);
    for (const key of state.queueKeys) queueKeys.add(key);
    await sleep(5);
  } while (!settled);
  await finished;
  return { subscribers, queueKeys: [...queueKeys] };
}

/** `workers` concurrent callers of `locker`, each taking `key` `iterations` times and recording each hold. */
async function contend(
  locker: Locker,
  recorder: HistoryRecorder,
  key: string,
  workers: number,
  iterations: number,
) {
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = 0; i < iterations; i++) {
        const lock: Lock = await locker.acquire(key, { ttl: 5_000, wait: 30_000 });
        recorder.acquired(lock);
        await sleep(2);
        recorder.released(lock);
        await lock.release();
      }
    }),
  );
}

describe("pubSub: 'poll'", () => {
  it.each(['token', 'legacy'] as const)(
    '%s: 2 lockers x 4 waiters x 5 holds of one key, in turn with no overlap; no subscriber, no queue, ever',
    async (protocol) => {
      await using server = await startRedis();
      const admin = server.client();
      const options: Omit<LockerOptions, 'redis'> = { protocol, pubSub: 'poll', retry: RETRY };
      const a = createLocker({ redis: server.client(), ...options });
      const b = createLocker({ redis: server.client(), ...options });
      const recorderA = new HistoryRecorder('A');
      const recorderB = new HistoryRecorder('B');
      const before = await commandCalls(admin);
      const seen = await watchWhile(
        admin,
        Promise.all([contend(a, recorderA, 'polled', 4, 5), contend(b, recorderB, 'polled', 4, 5)]),
      );
      await Promise.all([a.close(), b.close()]);
      const verdict = assertHistory([...recorderA.events, ...recorderB.events], { name: `poll-${protocol}` });
      expect(verdict.intervals).toBe(40);
      expect(seen).toEqual({ subscribers: 0, queueKeys: [] });
      // Nothing ever subscribed, nor wrote a queue (scripts' commands count too), even between samples.
      const after = await commandCalls(admin);
      expect(callsBetween(before, after, ['subscribe', 'ssubscribe', 'psubscribe', 'zadd'])).toBe(0);
    },
    60_000,
  );

  it('pollers and subscribed waiters share one key: each gets the lock in turn, with no overlap', async () => {
    await using server = await startRedis();
    const polling = createLocker({ redis: server.client(), pubSub: 'poll', retry: RETRY });
    const subscribed = createLocker({ redis: server.client(), retry: RETRY });
    const recorderA = new HistoryRecorder('poll');
    const recorderB = new HistoryRecorder('auto');
    // Queued waiters are handed the lock first; the pollers take it whenever nobody is queued.
    await Promise.all([
      contend(polling, recorderA, 'mixed', 3, 5),
      contend(subscribed, recorderB, 'mixed', 3, 5),
    ]);
    await Promise.all([polling.close(), subscribed.close()]);
    expect(assertHistory([...recorderA.events, ...recorderB.events], { name: 'poll-mixed' }).intervals).toBe(
      30,
    );
  }, 60_000);

  it("refuses 'off' (Redisson's OFF is plain pub/sub) naming it, and Redisson's checkPubSub and RedLock refuse 'poll', before any write", async () => {
    await using server = await startRedis();
    const redis = server.client();
    const before = await commandCalls(redis);
    const off = (() => {
      try {
        createLocker({ redis, pubSub: 'off' as 'poll' });
      } catch (error) {
        return error;
      }
    })();
    expect(off).toBeInstanceOf(InvalidOptionError);
    expect((off as InvalidOptionError).option).toBe('pubSub');
    expect((off as InvalidOptionError).value).toBe('off');
    expect((off as InvalidOptionError).message).toBe(
      `invalid option "pubSub": "off" (expected 'auto', 'sharded', 'plain' or 'poll'; 'off' is ambiguous: ` +
        `Redisson's shardedSubscriptionMode OFF is 'plain' here, and waiters without pub/sub are 'poll')`,
    );
    // What createRedisson checks its pubSub with: its waiters always listen.
    expect(() => checkPubSub('poll', redis)).toThrow(
      `invalid option "pubSub": "poll" (expected 'auto', 'sharded' or 'plain'; 'poll' is createLocker's: a Redisson client's waiters listen`,
    );
    expect(() => createRedlock({ clients: [redis], pubSub: 'poll' } as never)).toThrow(
      /unknown option "pubSub" \(expected one of the RedLock options/,
    );
    expect(await redis.dbsize()).toBe(0);
    expect(callsBetween(before, await commandCalls(redis), ['evalsha', 'eval', 'subscribe'])).toBe(0);
  });
});
