import { randomUUID } from 'node:crypto';
import {
  type AttemptContext,
  createLocker,
  createRedlock,
  DEFAULT_COMMAND_TIMEOUT,
  LuaScript,
  tokenProtocol,
} from '@lock/core';
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
/**
 * Run in the uncontended scenario only, beside `singleKinds`, to show where `@lock`'s cost over
 * the floor sits: what a fence alone adds, and what the token protocol's two scripts cost
 * without the engine around them.
 */
export const referenceKinds = ['floor + fence', '@lock protocol'] as const;
/**
 * Run in the hand-off and multi-process contention scenarios beside `singleKinds`: the least a
 * lock that queues its waiters and hands the lock to the next one costs on this machine.
 */
export const queueReferenceKinds = ['floor + queue'] as const;
export type SubjectKind =
  | (typeof singleKinds)[number]
  | (typeof quorumKinds)[number]
  | (typeof referenceKinds)[number]
  | (typeof queueReferenceKinds)[number];

/** How long any subject may wait for a lock before the run is declared broken. */
const WAIT = 60_000;
/** The floor's poll interval while the lock is busy: it has no notification. */
const FLOOR_POLL_MS = 5;

const compareAndDelete = new LuaScript(
  "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
);
/** The queued floor's attempt: SET NX PX, else the caller joins the queue (a list of tokens). */
const setOrQueue = new LuaScript(
  "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end redis.call('rpush', KEYS[2], ARGV[1]) return 0",
);
/** The queued floor's release: compare, then write the lock for the first queued token and tell it, or delete. */
const handToNext = new LuaScript(
  "if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end local next = redis.call('lpop', KEYS[2]) if next then redis.call('set', KEYS[1], next, 'PX', ARGV[2]) redis.call('publish', KEYS[1], next) else redis.call('del', KEYS[1]) end return 1",
);
/** The floor's SET NX PX with a fence drawn from one counter when it succeeds: the least a fenced lock costs. */
const fencedSet = new LuaScript(
  "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) end return 0",
);
/**
 * What `createLocker` sends with the first attempt of a call that may wait, under its defaults:
 * queued for the longest backoff (retry.max, 1 s) plus two command timeouts. A literal, as the
 * engine builds it: spreading a shared object into a new one cost about 2 µs per call, which the
 * engine does not pay.
 */
function protocolContext(owner: string, ttl: number): AttemptContext {
  return {
    wait: WAIT,
    fresh: true,
    queueLease: 1_000 + 2 * DEFAULT_COMMAND_TIMEOUT,
    queued: false,
    attempt: owner,
    grantLease: ttl,
  };
}

/** Builds `kind` on `clients` (single-server kinds use the first one). */
export function makeSubject(kind: SubjectKind, clients: readonly Redis[]): Subject {
  const [first] = clients;
  if (!first) throw new Error('makeSubject needs at least one client');
  switch (kind) {
    case 'floor':
      return floor(first);
    case 'floor (5)':
      return quorumFloor(clients);
    case 'floor + fence':
      return fencedFloor(first);
    case '@lock protocol':
      return protocolSubject(first);
    case 'floor + queue':
      return queuedFloor(first);
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

/** Tries `take` until it succeeds, every FLOOR_POLL_MS (the hand-written subjects have no notification). */
async function poll(name: string, key: string, take: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + WAIT;
  while (!(await take())) {
    if (performance.now() > deadline) throw new Error(`${name}: ${key} still busy after ${WAIT} ms`);
    await sleep(FLOOR_POLL_MS);
  }
}

/** The hand-written minimum: SET NX PX with a random token, EVALSHA compare-and-delete, polling while busy. */
function floor(redis: Redis): Subject {
  return {
    name: 'floor',
    async acquire(key, ttl) {
      const token = randomUUID();
      await poll('floor', key, async () => (await redis.set(key, token, 'PX', ttl, 'NX')) === 'OK');
      return async () => {
        await compareAndDelete.run(redis, [key], [token]);
      };
    },
    async close() {},
  };
}

/** The floor with a fence: SET NX PX and INCR in one script, the same compare-and-delete. */
function fencedFloor(redis: Redis): Subject {
  return {
    name: 'floor + fence',
    async acquire(key, ttl) {
      const token = randomUUID();
      await poll(
        'floor + fence',
        key,
        async () => (await fencedSet.run(redis, [key, 'bench:fence'], [token, ttl])) !== 0,
      );
      return async () => {
        await compareAndDelete.run(redis, [key], [token]);
      };
    },
    async close() {},
  };
}

/**
 * The floor with a queue and a direct hand-off: a refused caller joins a list, and the release
 * writes the lock for the first one in it and publishes its token on the key's channel, which
 * the waiter's subscriber connection hears. No fence, no crash or abort handling (a waiter that
 * dies stalls the queue), no re-entrancy: the fewest round trips and wake-ups a hand-off needs.
 */
function queuedFloor(redis: Redis): Subject {
  const subscriber = redis.duplicate();
  const granted = new Map<string, () => void>();
  const subscriptions = new Map<string, Promise<unknown>>();
  subscriber.on('message', (_channel: string, token: string) => {
    granted.get(token)?.();
    granted.delete(token);
  });
  return {
    name: 'floor + queue',
    async acquire(key, ttl) {
      const queue = `${key}:queue`;
      let subscribed = subscriptions.get(key);
      if (!subscribed) {
        subscribed = subscriber.subscribe(key);
        subscriptions.set(key, subscribed);
      }
      await subscribed;
      const token = randomUUID();
      // Listening before the attempt: the grant may be published before its reply is read.
      const handed = new Promise<void>((resolve) => granted.set(token, resolve));
      if ((await setOrQueue.run(redis, [key, queue], [token, ttl])) === 1) granted.delete(token);
      else await handed;
      return async () => {
        await handToNext.run(redis, [key, queue], [token, ttl]);
      };
    },
    async close() {
      subscriber.disconnect();
    },
  };
}

/** `@lock`'s token protocol called directly: its acquire and release scripts, without the engine. */
function protocolSubject(redis: Redis): Subject {
  const protocol = tokenProtocol();
  return {
    name: '@lock protocol',
    async acquire(key, ttl) {
      const owner = randomUUID();
      const context = protocolContext(owner, ttl);
      await poll(
        '@lock protocol',
        key,
        async () => (await protocol.acquire(redis, key, owner, ttl, context)).acquired,
      );
      return async () => {
        await protocol.release(redis, key, owner, owner);
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
      await poll('floor (5)', key, async () => {
        const replies = await Promise.all(clients.map((redis) => redis.set(key, token, 'PX', ttl, 'NX')));
        const granted = clients.filter((_, i) => replies[i] === 'OK');
        if (granted.length >= majority) return true;
        await deleteFrom(granted, key, token);
        return false;
      });
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
