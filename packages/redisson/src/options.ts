import { InvalidOptionError, type RedisClient, type ReplicationOptions, type RetryOptions } from '@lock/core';

/** Options of `createRedisson`. */
export interface RedissonOptions {
  /** The connection: an ioredis `Redis` (standalone or sentinel-backed) or `Cluster`. Never closed by this package. */
  readonly redis: RedisClient;
  /**
   * Prepended to every lock name, to mirror a Java `NameMapper` that prefixes names (Redisson
   * derives every auxiliary key from the mapped name, and so does this package). Default: `''`.
   */
  readonly prefix?: string;
  /** Redisson's `lockWatchdogTimeout` in ms: the lease of locks taken without one, renewed every third of it. Default: `30_000`. */
  readonly lockWatchdogTimeout?: number;
  /**
   * Redisson's `fairLockWaitTimeout` in ms: how long a queued fair-lock waiter may go silent
   * before it is dropped, for `lock()`; a waiting `tryLock` uses its own `wait`. Default: `300_000`.
   */
  readonly fairLockWaitTimeout?: number;
  /** WAIT for replicas after each acquisition, as Redisson's `checkLockSyncedSlaves`; see `@lock/core`. Default: `'auto'`. */
  readonly replication?: ReplicationOptions;
  /** Polling backoff while waiting; release messages usually wake a waiter first. Default: the engine's. */
  readonly retry?: RetryOptions;
}

const KNOWN = ['redis', 'prefix', 'lockWatchdogTimeout', 'fairLockWaitTimeout', 'replication', 'retry'];

export function checkOptions(options: RedissonOptions): void {
  if (typeof options !== 'object' || options === null)
    throw new InvalidOptionError('options', options, 'an object');
  for (const name of Object.keys(options)) {
    if (!KNOWN.includes(name))
      throw new InvalidOptionError(
        name,
        options[name as keyof RedissonOptions],
        `one of ${KNOWN.join(', ')}`,
      );
  }
  const { redis } = options;
  if (typeof redis !== 'object' || redis === null || typeof redis.evalsha !== 'function') {
    throw new InvalidOptionError('redis', redis, 'an ioredis Redis or Cluster client');
  }
  checkMs(options.lockWatchdogTimeout, 'lockWatchdogTimeout');
  checkMs(options.fairLockWaitTimeout, 'fairLockWaitTimeout');
}

/** Checks an optional duration in ms: a positive integer below 2^31. */
export function checkMs(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value >= 2 ** 31) {
    throw new InvalidOptionError(name, value, 'a positive integer number of ms below 2^31');
  }
  return value;
}
