import {
  AcquireTimeoutError,
  createLocker,
  createRedlock,
  LockBusyError,
  type Locker,
  NotOwnerError,
} from '@lock/core';
import { createRedisson } from '@lock/redisson';
import { type RedisMasters, type RedisServer, startMasters, startRedis } from '@lock/testing';
import { Lock as ThinkLock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import Redlock, { ExecutionError } from 'redlock';
import { sleep } from '../measure/stats.js';

/** How a section waits, and what it holds. */
export interface SectionOptions {
  /** Lease in ms; fixed, never renewed. */
  readonly ttl: number;
  /** How long to wait for a busy lock, in ms. */
  readonly wait: number;
  /** Stops the wait; only given to subjects that take one (`supports.signal`). */
  readonly signal?: AbortSignal | undefined;
}

/** A renewing hold: a short lease kept past its end by the subject's own renewal. */
export interface RenewalOptions {
  /** Lease in ms, renewed every third of it. */
  readonly ttl: number;
  /** How long to hold, in ms: longer than `ttl`, so the hold survives only by renewal. */
  readonly holdMs: number;
  readonly signal?: AbortSignal | undefined;
}

/** One implementation as the soak drives it. */
export interface SoakSubject {
  readonly name: string;
  /** The servers it runs on, for the table. */
  readonly servers: string;
  /** What it can do beyond acquire + release; the mix leaves out what it cannot. */
  readonly supports: {
    /** Takes a per-call AbortSignal, so waits can be aborted. */
    readonly signal: boolean;
    readonly reentry: boolean;
    readonly renewal: boolean;
  };
  /**
   * Runs `fn` holding `key`, then releases it: true, or false when the lock stayed busy for
   * `wait`. Rejects when `signal` aborts the wait.
   */
  section(key: string, options: SectionOptions, fn: () => Promise<void>): Promise<boolean>;
  /** Takes `key`, takes it again inside that hold (a re-entry), releases both: throws unless the inner one re-entered. */
  reenter(key: string, options: SectionOptions): Promise<void>;
  /** Holds `key` for `holdMs` on a renewed `ttl` lease: whether it was still held at the end. */
  renewed(key: string, options: RenewalOptions): Promise<boolean>;
  close(): Promise<void>;
}

export const soakKinds = [
  '@lock token',
  '@lock legacy',
  '@lock RedLock',
  '@lock/redisson RLock',
  '@lock/thinkphp Lock',
  'redlock',
  'redis-semaphore',
] as const;
export type SoakKind = (typeof soakKinds)[number];

/** The redis-servers a subject runs on, started for it alone. */
export interface SoakServers {
  readonly label: string;
  readonly clients: readonly Redis[];
  /** A connection for the harness (reading the version), not the subject's. */
  readonly admin: Redis;
  stop(): Promise<void>;
}

/** RedLock over this many independent masters. */
const MASTERS = 3;

/** Starts the servers `kind` runs on: three masters for core's RedLock, else one server. */
export async function startServers(kind: SoakKind): Promise<SoakServers> {
  if (kind === '@lock RedLock') {
    const masters: RedisMasters = await startMasters(MASTERS);
    return {
      label: `${MASTERS} masters`,
      clients: masters.clients(),
      admin: masters.servers[0]!.client(),
      stop: () => masters.stop(),
    };
  }
  const server: RedisServer = await startRedis();
  return { label: '1 server', clients: [server.client()], admin: server.client(), stop: () => server.stop() };
}

/** Builds `kind` on `servers`, with `renewalTtl` as the lease of locks renewed by a client-wide setting. */
export function makeSoakSubject(kind: SoakKind, servers: SoakServers, renewalTtl: number): SoakSubject {
  const [redis] = servers.clients;
  if (!redis) throw new Error('makeSoakSubject needs at least one client');
  switch (kind) {
    case '@lock token':
      return engineSubject(kind, servers.label, createLocker({ redis }));
    case '@lock legacy':
      return engineSubject(kind, servers.label, createLocker({ redis, protocol: 'legacy' }));
    case '@lock RedLock':
      return engineSubject(kind, servers.label, createRedlock({ clients: [...servers.clients] }));
    case '@lock/redisson RLock':
      return redissonSubject(kind, servers.label, redis, renewalTtl);
    case '@lock/thinkphp Lock':
      return thinkSubject(kind, servers.label, redis);
    case 'redlock':
      return redlockSubject(kind, servers.label, new Redlock([redis]));
    case 'redis-semaphore':
      return semaphoreSubject(kind, servers.label, redis);
  }
}

function unsupported(name: string, what: string): never {
  throw new Error(`${name} has no ${what}; the mix should have left it out`);
}

/** Runs `fn` and then `release`, whatever `fn` did; `fn`'s error wins over a release error. */
async function holding(fn: () => Promise<void>, release: () => Promise<unknown>): Promise<true> {
  try {
    await fn();
  } finally {
    await release();
  }
  return true;
}

function engineSubject(name: string, servers: string, locker: Locker): SoakSubject {
  return {
    name,
    servers,
    supports: { signal: true, reentry: true, renewal: true },
    async section(key, { ttl, wait, signal }, fn) {
      let lock: Awaited<ReturnType<Locker['acquire']>>;
      try {
        lock = await locker.acquire(key, { ttl, wait, signal });
      } catch (error) {
        if (error instanceof AcquireTimeoutError || error instanceof LockBusyError) return false;
        throw error;
      }
      return holding(fn, () => lock.release());
    },
    async reenter(key, { ttl, wait, signal }) {
      await locker.using(key, { ttl, wait, signal }, () =>
        locker.using(key, { ttl, wait, signal }, (inner) => {
          if (inner.holds !== 2) throw new Error(`${name}: nested using of ${key} has ${inner.holds} holds`);
        }),
      );
    },
    async renewed(key, { ttl, holdMs, signal }) {
      const lock = await locker.acquire(key, { ttl, renew: true, signal });
      await sleep(holdMs);
      const held = !lock.signal.aborted;
      return (await lock.release()) === 'released' && held;
    },
    close: () => locker.close(),
  };
}

/** Redisson's RLock; each section is a `redisson.run`, so a nested one is another thread. */
function redissonSubject(name: string, servers: string, redis: Redis, renewalTtl: number): SoakSubject {
  // lock() without a lease is renewed on the client's watchdog lease: the renewal case's.
  const redisson = createRedisson({ redis, lockWatchdogTimeout: renewalTtl });
  return {
    name,
    servers,
    supports: { signal: true, reentry: true, renewal: true },
    section: (key, { ttl, wait, signal }, fn) =>
      redisson.run(async () => {
        const lock = redisson.getLock(key);
        if (!(await lock.tryLock({ wait, lease: ttl, signal }))) return false;
        return holding(fn, () => lock.unlock());
      }),
    reenter: (key, { ttl, signal }) =>
      redisson.run(async () => {
        const lock = redisson.getLock(key);
        await lock.lock({ lease: ttl, signal });
        try {
          await lock.lock({ lease: ttl, signal });
          await lock.unlock();
        } finally {
          await lock.unlock();
        }
      }),
    renewed: (key, { holdMs, signal }) =>
      redisson.run(async () => {
        const lock = redisson.getLock(key);
        await lock.lock({ signal });
        await sleep(holdMs);
        try {
          await lock.unlock();
          return true;
        } catch (error) {
          if (error instanceof NotOwnerError) return false;
          throw error;
        }
      }),
    close: () => redisson.shutdown(),
  };
}

/** ThinkPHP's pause between attempts, in seconds; `wait` becomes that many attempts. */
const THINK_SLEEP = 0.025;

/** The ThinkPHP `Lock`: whole-second leases, attempts `THINK_SLEEP` apart, no signal, re-entry or renewal. */
function thinkSubject(name: string, servers: string, redis: Redis): SoakSubject {
  return {
    name,
    servers,
    supports: { signal: false, reentry: false, renewal: false },
    async section(key, { ttl, wait }, fn) {
      const lock = new ThinkLock(key, {
        redis,
        expire: Math.ceil(ttl / 1_000),
        retryMax: 1 + Math.floor(wait / (THINK_SLEEP * 1_000)),
        sleep: THINK_SLEEP,
      });
      if (!(await lock.lock())) return false;
      return holding(fn, () => lock.unlock());
    },
    reenter: () => unsupported(name, 're-entry'),
    renewed: () => unsupported(name, 'renewal'),
    async close() {},
  };
}

/** redlock@5's retry step while waiting, in ms (± half of it): `wait` becomes that many retries. */
const REDLOCK_RETRY_MS = 10;

/** redlock@5: no signal on acquire and no re-entry; renewal through `using`. */
function redlockSubject(name: string, servers: string, redlock: Redlock): SoakSubject {
  return {
    name,
    servers,
    supports: { signal: false, reentry: false, renewal: true },
    async section(key, { ttl, wait }, fn) {
      let lock: Awaited<ReturnType<Redlock['acquire']>>;
      try {
        lock = await redlock.acquire([key], ttl, {
          retryCount: Math.floor(wait / REDLOCK_RETRY_MS),
          retryDelay: REDLOCK_RETRY_MS,
          retryJitter: REDLOCK_RETRY_MS / 2,
        });
      } catch (error) {
        if (error instanceof ExecutionError) return false;
        throw error;
      }
      return holding(fn, () => lock.release());
    },
    reenter: () => unsupported(name, 're-entry'),
    renewed: (key, { ttl, holdMs }) =>
      // `using` extends once less than the threshold is left: after a third of the lease, as the others.
      redlock.using([key], ttl, { automaticExtensionThreshold: (ttl * 2) / 3 }, async (signal) => {
        await sleep(holdMs);
        return !signal.aborted;
      }),
    async close() {},
  };
}

/** redis-semaphore's `Mutex`: a per-call signal on acquire, no re-entry, renewal by its refresh timer. */
function semaphoreSubject(name: string, servers: string, redis: Redis): SoakSubject {
  return {
    name,
    servers,
    supports: { signal: true, reentry: false, renewal: true },
    async section(key, { ttl, wait, signal }, fn) {
      const mutex = new Mutex(redis, key, { lockTimeout: ttl, acquireTimeout: wait, refreshInterval: 0 });
      if (!(await mutex.tryAcquire(signal))) return false;
      return holding(fn, () => mutex.release());
    },
    reenter: () => unsupported(name, 're-entry'),
    async renewed(key, { ttl, holdMs, signal }) {
      let lost = false;
      const mutex = new Mutex(redis, key, {
        lockTimeout: ttl,
        refreshInterval: ttl / 3,
        onLockLost: () => {
          lost = true;
        },
      });
      await mutex.acquire(signal);
      await sleep(holdMs);
      const held = mutex.isAcquired && !lost;
      await mutex.release();
      return held;
    },
    async close() {},
  };
}
