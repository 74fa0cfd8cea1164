import { createLocker } from '@lock/core';
import type { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock from 'redlock';
import { counted } from '../measure/counted.js';
import { sleep } from '../measure/stats.js';
import { trackingTimers } from '../measure/timers.js';

export interface RenewalResult {
  readonly locks: number;
  /** Timers alive while the locks were held, beyond those alive before. */
  readonly timers: number;
  /** Commands the client sent per renewal interval while holding (each a round trip: no pipelining). */
  readonly roundTripsPerInterval: number;
  /** Commands the server ran per renewal interval, including those inside scripts. */
  readonly commandsPerInterval: number;
  /** Locks no longer held at the end of the window. */
  readonly lost: number;
}

export interface RenewalShape {
  readonly locks: number;
  /** Lease in ms; every implementation renews every ttl/3. */
  readonly ttl: number;
  /** How many renewal intervals to observe. */
  readonly intervals: number;
}

/** Holds `locks` renewing locks, then releases them; the caller measures the window in between. */
interface Holder {
  /** Whether each lock is still held. */
  held(): number;
  releaseAll(): Promise<void>;
}

type Acquirer = (redis: Redis, keys: readonly string[], ttl: number) => Promise<Holder>;

export const renewingKinds = ['@lock', 'redlock', 'redis-semaphore'] as const;
export type RenewingKind = (typeof renewingKinds)[number];

const acquirers: Record<RenewingKind, Acquirer> = {
  async '@lock'(redis, keys, ttl) {
    const locker = createLocker({ redis, ttl });
    const locks = await inBatches(keys, (key) => locker.acquire(key));
    return {
      held: () => locks.filter((lock) => !lock.signal.aborted).length,
      async releaseAll() {
        await inBatches(locks, (lock) => lock.release());
        await locker.close();
      },
    };
  },

  async redlock(redis, keys, ttl) {
    // Auto-extension of redlock@5 lives in `using`: it extends once less than the threshold is left.
    const redlock = new Redlock([redis], { automaticExtensionThreshold: (ttl * 2) / 3 });
    let finish: () => void = () => {};
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const signals: AbortSignal[] = [];
    let markStarted: () => void = () => {};
    const allStarted = new Promise<void>((resolve) => {
      markStarted = resolve;
    });
    const routines = keys.map((key) =>
      redlock.using([key], ttl, {}, async (signal) => {
        signals.push(signal);
        if (signals.length === keys.length) markStarted();
        await done;
      }),
    );
    await Promise.race([allStarted, Promise.all(routines)]);
    return {
      held: () => signals.filter((signal) => !signal.aborted).length,
      async releaseAll() {
        finish();
        await Promise.all(routines);
      },
    };
  },

  async 'redis-semaphore'(redis, keys, ttl) {
    const mutexes = keys.map(
      (key) => new Mutex(redis, key, { lockTimeout: ttl, acquireTimeout: 10_000, refreshInterval: ttl / 3 }),
    );
    await inBatches(mutexes, (mutex) => mutex.acquire());
    return {
      held: () => mutexes.filter((mutex) => mutex.isAcquired).length,
      async releaseAll() {
        await inBatches(mutexes, (mutex) => mutex.release());
      },
    };
  },
};

/** Holds `shape.locks` renewing locks for `shape.intervals` renewal intervals, counting timers and commands. */
export function renewal(kind: RenewingKind, redis: Redis, shape: RenewalShape): Promise<RenewalResult> {
  const keys = Array.from({ length: shape.locks }, (_, i) => `bench:renewal:${kind}:${i}`);
  return trackingTimers(async (pendingTimers) => {
    const timersBefore = await pendingTimers();
    const holder = await acquirers[kind](redis, keys, shape.ttl);
    const timers = (await pendingTimers()) - timersBefore;
    const interval = shape.ttl / 3;
    const window = await counted([redis], async () => {
      const start = performance.now();
      await sleep(interval * shape.intervals);
      return (performance.now() - start) / interval;
    });
    const intervals = window.result;
    const held = holder.held();
    await holder.releaseAll();
    return {
      locks: shape.locks,
      timers,
      roundTripsPerInterval: window.roundTrips / intervals,
      commandsPerInterval: window.commands / intervals,
      lost: shape.locks - held,
    };
  });
}

/** Runs `fn` over `items` at most 500 at a time, in order of results. */
async function inBatches<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += 500)
    results.push(...(await Promise.all(items.slice(i, i + 500).map(fn))));
  return results;
}
