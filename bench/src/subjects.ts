import { randomUUID } from 'node:crypto';
import { createLocker, createRedlock, LuaScript } from '@lock/core';
import type { Redis } from 'ioredis';
import { Mutex, RedlockMutex } from 'redis-semaphore';
import Redlock from 'redlock';
import { sleep } from './measure/stats.js';

/** Gives the lock back. */
export type Release = () => Promise<void>;

/** One lock implementation as every scenario drives it: wait until acquired, then release. */
export interface Subject {
  readonly name: string;
  /** Waits (up to a minute) for `key` with a fixed lease of `ttl` ms; no renewal. */
  acquire(key: string, ttl: number): Promise<Release>;
  close(): Promise<void>;
}

/** The implementations compared on one server, then on five masters. */
export const singleKinds = ['floor', '@lock', 'redlock', 'redis-semaphore'] as const;
export const quorumKinds = ['floor (5)', '@lock redlock', 'redlock (5)', 'RedlockMutex'] as const;
export type SubjectKind = (typeof singleKinds)[number] | (typeof quorumKinds)[number];

/** How long any subject may wait for a lock before the run is declared broken. */
const WAIT = 60_000;
/** The floor's poll interval while the lock is busy: it has no notification. */
const FLOOR_POLL_MS = 5;

const compareAndDelete = new LuaScript(
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
);

/** Builds `kind` on `clients` (single-server kinds use the first one). */
export function makeSubject(kind: SubjectKind, clients: readonly Redis[]): Subject {
  const [first] = clients;
  if (!first) throw new Error('makeSubject needs at least one client');
  switch (kind) {
    case 'floor':
      return floor(first);
    case 'floor (5)':
      return quorumFloor(clients);
    case '@lock':
      return engineSubject(kind, createLocker({ redis: first }));
    case '@lock redlock':
      return engineSubject(kind, createRedlock({ clients: [...clients] }));
    case 'redlock':
    case 'redlock (5)':
      return redlockSubject(kind, new Redlock(kind === 'redlock' ? [first] : clients, { retryCount: -1 }));
    case 'redis-semaphore':
      return semaphoreSubject(kind, (key, ttl) => new Mutex(first, key, mutexOptions(ttl)));
    case 'RedlockMutex':
      return semaphoreSubject(kind, (key, ttl) => new RedlockMutex([...clients], key, mutexOptions(ttl)));
  }
}

/** The hand-written minimum: SET NX PX with a random token, EVALSHA compare-and-delete, polling while busy. */
function floor(redis: Redis): Subject {
  return {
    name: 'floor',
    async acquire(key, ttl) {
      const token = randomUUID();
      const deadline = performance.now() + WAIT;
      while ((await redis.set(key, token, 'PX', ttl, 'NX')) !== 'OK') {
        if (performance.now() > deadline) throw new Error(`floor: ${key} still busy after ${WAIT} ms`);
        await sleep(FLOOR_POLL_MS);
      }
      return async () => {
        await compareAndDelete.run(redis, [key], [token]);
      };
    },
    async close() {},
  };
}

/**
 * The floor over several masters: its two commands sent to every master at once (no serial
 * step), held when a majority said OK; a failed attempt undoes its partial grants and polls
 * again. Kept apart from `floor` so the single-server floor pays no fan-out bookkeeping.
 */
function quorumFloor(clients: readonly Redis[]): Subject {
  const majority = Math.floor(clients.length / 2) + 1;
  const deleteFrom = (servers: readonly Redis[], key: string, token: string) =>
    Promise.all(servers.map((redis) => compareAndDelete.run(redis, [key], [token])));
  return {
    name: 'floor (5)',
    async acquire(key, ttl) {
      const token = randomUUID();
      const deadline = performance.now() + WAIT;
      for (;;) {
        const replies = await Promise.all(clients.map((redis) => redis.set(key, token, 'PX', ttl, 'NX')));
        const granted = clients.filter((_, i) => replies[i] === 'OK');
        if (granted.length >= majority) break;
        await deleteFrom(granted, key, token);
        if (performance.now() > deadline) throw new Error(`floor (5): ${key} still busy after ${WAIT} ms`);
        await sleep(FLOOR_POLL_MS);
      }
      return async () => {
        await deleteFrom(clients, key, token);
      };
    },
    async close() {},
  };
}

function engineSubject(name: string, locker: ReturnType<typeof createLocker>): Subject {
  return {
    name,
    async acquire(key, ttl) {
      const lock = await locker.acquire(key, { ttl, wait: WAIT });
      return async () => {
        await lock.release();
      };
    },
    close: () => locker.close(),
  };
}

function redlockSubject(name: string, redlock: Redlock): Subject {
  return {
    name,
    async acquire(key, ttl) {
      const lock = await redlock.acquire([key], ttl);
      return async () => {
        await lock.release();
      };
    },
    async close() {},
  };
}

function mutexOptions(ttl: number) {
  // Fixed lease like the others: no refresh timer.
  return { lockTimeout: ttl, acquireTimeout: WAIT, refreshInterval: 0 };
}

function semaphoreSubject(name: string, mutex: (key: string, ttl: number) => Mutex | RedlockMutex): Subject {
  return {
    name,
    async acquire(key, ttl) {
      const lock = mutex(key, ttl);
      await lock.acquire();
      return () => lock.release();
    },
    async close() {},
  };
}
