import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { AcquireTimeoutError, createLocker, type Lock, type Locker, tokenProtocol } from '@lock/core';
import { startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import {
  countScripts,
  listen,
  queueCrashedWaiter,
  registrations,
  SLOW_POLL,
  until,
  untilQueued,
  untilSubscribed,
} from '../support/waiter-queue.js';

describe('the token protocol’s waiter queue', () => {
  it('a release wakes exactly one waiter across lockers, in arrival order, each on its first wake-up', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const holder = createLocker({ redis });
    // Four lockers stand for four processes: each has its own client, so its own subscriber and
    // inbox, and its own waiters.
    // Their attempts counted as answered: the scripts they send include others (fence stamps).
    const protocol = tokenProtocol();
    const acquire = protocol.acquire.bind(protocol);
    let answered = 0;
    protocol.acquire = (...args) =>
      acquire(...args).finally(() => {
        answered += 1;
      });
    const lockers: Locker[] = Array.from({ length: 4 }, () =>
      createLocker({ redis: server.client(), protocol, retry: SLOW_POLL }),
    );
    const attempts: number[] = [];
    const onAcquire = (message: unknown) => {
      const event = message as { key: string; attempts: number };
      if (event.key === 'queued') attempts.push(event.attempts);
    };
    subscribe('lock:acquire', onAcquire);
    try {
      const first = await holder.acquire('queued', { ttl: 30_000 });
      attempts.length = 0;
      const order: number[] = [];
      const waiting: Promise<Lock>[] = [];
      for (const [index, locker] of lockers.entries()) {
        waiting.push(
          locker.acquire('queued', { ttl: 30_000, wait: 20_000 }).then((lock) => {
            order.push(index);
            return lock;
          }),
        );
        await untilQueued(redis, 'queued', index + 1);
      }
      // Every locker subscribed, and each waiter's retry right after subscribing answered (on its
      // own connection): none of them can race the release below.
      await untilSubscribed(redis, '{lock:queued}:released', lockers.length);
      await until(async () => answered >= 2 * lockers.length, 'every waiter tried again');
      await first.release();
      for (let turn = 0; turn < lockers.length; turn++) {
        const lock = await Promise.race(waiting.filter((_, i) => !order.slice(0, turn).includes(i)));
        await lock.release();
      }
      expect(order).toEqual([0, 1, 2, 3]);
      // Refused, refused again right after subscribing (a release may have slipped by), then
      // handed the lock by the release itself: no attempt of its own, and nobody woke for nothing.
      expect(attempts).toEqual([2, 2, 2, 2]);
      expect(await redis.exists('{lock:queued}:queue', '{lock:queued}:waiters')).toBe(0);
    } finally {
      unsubscribe('lock:acquire', onAcquire);
      await Promise.all([holder, ...lockers].map((locker) => locker.close()));
    }
  });

  it('a waiter joining a live subscription that no release reached since its attempt does not try again', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const holder = createLocker({ redis });
    const locker = createLocker({ redis, retry: SLOW_POLL });
    const events: { key: string; owner: string; attempts: number }[] = [];
    const held = new Set<string>();
    const onAcquire = (message: unknown) => events.push(message as (typeof events)[number]);
    subscribe('lock:acquire', onAcquire);
    try {
      const takeTurns = async (count: number) => {
        const first = await holder.acquire('burst', { ttl: 30_000 });
        held.add(first.owner);
        const waiting: Promise<Lock>[] = [];
        for (let i = 0; i < count; i++) {
          waiting.push(locker.acquire('burst', { ttl: 30_000, wait: 20_000 }));
          await untilQueued(redis, 'burst', i + 1);
          await untilSubscribed(redis, '{lock:burst}:released', 1);
        }
        await first.release();
        for (const lock of waiting) await (await lock).release();
      };
      await takeTurns(3);
      // The queue outlives its last waiter for a while: the next burst finds it subscribed.
      await takeTurns(1);
      const waiters = events.filter((event) => event.key === 'burst' && !held.has(event.owner));
      expect(waiters.map((event) => event.attempts)).toEqual([2, 1, 1, 1]);
    } finally {
      unsubscribe('lock:acquire', onAcquire);
      await Promise.all([holder.close(), locker.close()]);
    }
  });

  it('a release with nobody queued publishes nothing; one with a waiter queued hands it the lock', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const listener = server.client();
    const messages = await listen(listener, '{lock:quiet}:released');
    const holder = createLocker({ redis });
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    for (let i = 0; i < 3; i++) await (await holder.acquire('quiet', { ttl: 30_000 })).release();
    const first = await holder.acquire('quiet', { ttl: 30_000 });
    const waiting = waiter.acquire('quiet', { ttl: 30_000, wait: 20_000 });
    await untilQueued(redis, 'quiet', 1);
    await first.release();
    const next = await waiting;
    await until(async () => messages.length > 0, 'the grant message');
    // Messages of one connection arrive in order: had an unqueued release published, it would come first.
    expect(messages).toEqual([
      expect.stringMatching(new RegExp(`^granted:${next.fence}:30000:\\d+:${next.owner}$`)),
    ]);
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('a waiter that aborts or times out leaves the queue at once', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const locker = createLocker({ redis });
    const lock = await locker.acquire('left', { ttl: 30_000 });
    const controller = new AbortController();
    const aborted = locker
      .acquire('left', { wait: 10_000, signal: controller.signal })
      .catch((e: unknown) => e);
    const timedOut = locker.acquire('left', { wait: 300 }).catch((e: unknown) => e);
    await untilQueued(redis, 'left', 2);
    controller.abort();
    expect((await aborted) as Error).toHaveProperty('name', 'AbortError');
    expect((await timedOut) as Error).toHaveProperty('code', 'ERR_LOCK_ACQUIRE_TIMEOUT');
    expect(await registrations(redis, 'left')).toEqual({});
    expect(await redis.zcard('{lock:left}:queue')).toBe(0);
    await lock.release();
    await locker.close();
  });

  it('a waiter aborted while an attempt is in flight gives up when the attempt is answered, without sleeping first', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const admin = server.client();
    const holder = createLocker({ redis });
    // Polls once a minute: once the attempt is answered, only the abort can end this wait in time.
    const waiterRedis = server.client();
    const locker = createLocker({ redis: waiterRedis, retry: SLOW_POLL, commandTimeout: 5_000 });
    const attempts = countScripts(waiterRedis);
    const lock = await holder.acquire('in-flight', { ttl: 30_000 });
    const controller = new AbortController();
    const waiting = locker
      .acquire('in-flight', { wait: 60_000, signal: controller.signal })
      .catch((e: unknown) => e);
    await untilQueued(redis, 'in-flight', 1);
    await untilSubscribed(admin, '{lock:in-flight}:released', 1);
    // Asleep: its first attempt and the one it sends once subscribed both answered, so that the
    // message below, not an attempt already on the wire, is what makes it try again.
    await until(
      async () => attempts() >= 2 && attempts.answered() === attempts(),
      'the waiter to fall asleep',
    );
    // Read before the message: the woken waiter's attempt may be sent before the pipeline's reply is read.
    const asleepAfter = attempts();
    // A bare release message wakes the waiter; its attempt then waits out the write pause.
    const [[, woke]] = (await admin
      .pipeline()
      .publish('{lock:in-flight}:released', 'released')
      .client('PAUSE', 2_000, 'WRITE')
      .exec()) as [[unknown, number]];
    expect(woke).toBe(1);
    await until(async () => attempts() > asleepAfter, 'the woken waiter to send an attempt');
    controller.abort();
    expect((await waiting) as Error).toHaveProperty('name', 'AbortError');
    // The abort does not wait for its cleanup, which follows at once; its registration would
    // otherwise last as long as its slow polling (a minute).
    await until(
      async () => Object.keys(await registrations(redis, 'in-flight')).length === 0,
      'the aborted waiter to leave the queue',
    );
    await lock.release();
    await holder.close();
    await locker.close();
  });

  it('owners queued within one server millisecond keep their order of arrival, not of name', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const holder = createLocker({ redis });
    const lock = await holder.acquire('ties', { ttl: 30_000 });
    const protocol = tokenProtocol();
    // Named against the alphabet and sent back to back on one connection: Redis runs them in this
    // order, most within the same millisecond.
    const owners = Array.from({ length: 20 }, (_, i) => `owner-${String.fromCharCode(122 - i)}`);
    await Promise.all(
      owners.map((owner) =>
        protocol.acquire(redis, 'lock:ties', owner, 30_000, {
          wait: 20_000,
          queueLease: 20_000,
          attempt: owner,
        }),
      ),
    );
    expect(await redis.zrange('{lock:ties}:queue', '0', '-1')).toEqual(owners);
    await lock.release();
    await holder.close();
  });

  it('a waiter that gives up right after a release named it passes the turn to the next in line', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const listener = server.client();
    const messages = await listen(listener, '{lock:named}:released');
    const holder = createLocker({ redis });
    const locker = createLocker({ redis, retry: SLOW_POLL });
    const protocol = tokenProtocol();
    const lock = await holder.acquire('named', { ttl: 30_000 });
    // First in line, queued by hand: an explicit owner is named by the release, not granted the lock.
    await protocol.acquire(redis, 'lock:named', 'first', 30_000, {
      wait: 20_000,
      queueLease: 20_000,
      attempt: 'a',
    });
    const second = locker.acquire('named', { owner: 'second', ttl: 30_000, wait: 20_000 });
    await untilQueued(redis, 'named', 2);
    await untilSubscribed(redis, '{lock:named}:released', 2);
    await lock.release();
    await protocol.abandon!(redis, 'lock:named', 'first', { wait: 20_000, queueLease: 20_000 });
    // Without a message naming it, the second would sleep until its next poll, a minute away.
    await until(async () => messages.length >= 2, 'a message naming the next in line');
    expect(messages).toEqual(['released:first', 'released:second']);
    const next = await second;
    expect(next.owner).toBe('second');
    await next.release();
    await Promise.all([holder.close(), locker.close(), listener.quit()]);
  });

  it('a waiter process killed while queued is skipped once its registration lapses', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const { holder, first, dead, crashed } = await queueCrashedWaiter(redis, server.url, 'crashed');
    try {
      const survivor = createLocker({ redis, retry: SLOW_POLL });
      const waiting = survivor.acquire('crashed', { ttl: 5_000, wait: 20_000 });
      await untilQueued(redis, 'crashed', 2);
      // The crashed waiter came first; the release may pick it only while its lease lasts.
      const lapses = (await registrations(redis, 'crashed'))[dead]!;
      for (;;) {
        const [seconds, micros] = (await redis.time()).map(Number) as [number, number];
        if (seconds * 1_000 + micros / 1_000 > lapses) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await first.release();
      const next = await waiting;
      expect(next.fence).toBe(first.fence + 1);
      await next.release();
      await survivor.close();
    } finally {
      crashed.child.kill('SIGKILL');
      await holder.close();
    }
  });

  it('a waiter that runs out of time gives up its place: the release that follows hands the lock to nobody', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const holder = createLocker({ redis });
    // Registered for a minute: had it stayed queued, the release would hand it the lock.
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    const lock = await holder.acquire('timed-out', { ttl: 30_000 });
    const refusal = await waiter
      .acquire('timed-out', { ttl: 5_000, wait: 200 })
      .catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AcquireTimeoutError);
    await lock.release();
    expect(await waiter.isLocked('timed-out')).toBe(false);
    expect(await redis.exists('{lock:timed-out}:queue', '{lock:timed-out}:waiters')).toBe(0);
    await holder.close();
    await waiter.close();
  });

  it('a lock handed to a waiter well inside its wait comes with its lease still ahead', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const holder = createLocker({ redis });
    // Polls once a minute: the lock can only reach it through the release's hand-off.
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    const lock = await holder.acquire('handed', { ttl: 30_000 });
    const waiting = waiter.acquire('handed', { ttl: 5_000, wait: 10_000 });
    await untilSubscribed(redis, '{lock:handed}:released', 1);
    await lock.release();
    const next = await waiting;
    expect(next.remaining()).toBeGreaterThan(0);
    await next.release();
    await holder.close();
    await waiter.close();
  });

  it('a grant racing the waiter’s deadline never hands out an expired handle nor leaves a lock held by nobody', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const holder = createLocker({ redis });
    const waiter = createLocker({ redis });
    const wait = 500;
    // Releases every 5 ms around the deadline, where either outcome may win depending on timers
    // and load, each checked for what it must be; and one at once and one long after, so that
    // both outcomes, and both checks, always occur.
    const offsets = [0, ...Array.from({ length: 12 }, (_, i) => wait - 30 + i * 5), 4 * wait];
    const grants: { key: string; remaining: number }[] = [];
    const refusals: { key: string; error: unknown }[] = [];
    const orphaned: string[] = [];
    for (const [i, offset] of offsets.entries()) {
      const key = `race:${i}`;
      const lock = await holder.acquire(key, { ttl: 5_000 });
      const outcome = waiter.acquire(key, { ttl: 5_000, wait }).then(
        (handle) => ({ handle }),
        (error: unknown) => ({ error }),
      );
      await new Promise((resolve) => setTimeout(resolve, offset));
      await lock.release();
      const settled = await outcome;
      if ('handle' in settled) {
        grants.push({ key, remaining: settled.handle.remaining() });
        await settled.handle.release();
      } else {
        refusals.push({ key, error: settled.error });
      }
      if (await waiter.isLocked(key)) orphaned.push(key);
    }
    expect(grants.length).toBeGreaterThan(0);
    expect(refusals.length).toBeGreaterThan(0);
    // A handle is handed out only while valid; a waiter that gets none ran out of time, nothing else.
    expect(grants.filter(({ remaining }) => remaining <= 0)).toEqual([]);
    expect(refusals.filter(({ error }) => !(error instanceof AcquireTimeoutError))).toEqual([]);
    expect(orphaned).toEqual([]);
    await holder.close();
    await waiter.close();
  });
});
