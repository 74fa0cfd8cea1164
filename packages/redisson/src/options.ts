import {
  checkMs,
  checkPrefix,
  checkPubSub,
  checkReplication,
  checkRetry,
  checkTtl,
  DEFAULT_RETRY,
  InvalidOptionError,
  isCluster,
  type OptionAlias,
  type PubSubOption,
  type RedisClient,
  type ReplicationOptions,
  type RetryOptions,
  refuseUnknown,
} from '@lock/core';

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
   * Redisson's `fairLockWaitTimeout` in ms: the allowance in a fair-lock `lock()` waiter's queue
   * deadline, not how long it may go silent. A waiter queues with the deadline of the waiter
   * ahead of it (or the holder's remaining TTL) plus this, and is dropped once found at the head
   * past it, dead or alive (a live one queues again at the tail, as in Redisson): a waiter that
   * died holds up the queue until then, mostly the holder's TTL when it queued. A waiting
   * `tryLock` uses its own `wait`. Default: `300_000`.
   */
  readonly fairLockWaitTimeout?: number;
  /**
   * WAIT for replicas after each acquisition, as Redisson's `checkLockSyncedSlaves`; see
   * `@lock/core`. Not on a cluster, where `'auto'` sends none (Redisson does): a failover can
   * leave two owners until the holder's next renewal. Default: `'auto'`.
   */
  readonly replication?: ReplicationOptions;
  /** Polling backoff while waiting; release messages usually wake a waiter first. Default: the engine's. */
  readonly retry?: RetryOptions;
  /**
   * How long one round trip to Redis may take, in ms (Redisson's `timeout`): a call Redis does
   * not answer in time (down, frozen, partitioned) rejects with `LockUnavailableError`. Every
   * method settles within it, or within `wait` plus it when waiting. Default: `500`.
   */
  readonly commandTimeout?: number;
  /**
   * On a cluster, how unlocks publish and waiters subscribe, as Redisson's `shardedSubscriptionMode`:
   * `'auto'` (its `AUTO`: sharded when the servers answer `PUBSUB SHARDNUMSUB`, or the mode
   * another locker forced on this client), `'sharded'` (`ON`: `SPUBLISH`/`SSUBSCRIBE`) or
   * `'plain'` (`OFF`: `PUBLISH`/`SUBSCRIBE`, what Redisson before 3.22 always does). Choose what
   * the Java peers use; a forced mode holds for every locker on the client (see `@lock/core`).
   * Ignored off a cluster, where pub/sub is always plain. Default: `'auto'`.
   */
  readonly pubSub?: PubSubOption;
}

const KNOWN = [
  'redis',
  'prefix',
  'lockWatchdogTimeout',
  'fairLockWaitTimeout',
  'replication',
  'retry',
  'commandTimeout',
  'pubSub',
];

/** Redisson `Config` names a Java user may carry over, and what this package calls them. */
const CONFIG_NAMES: Readonly<Record<string, OptionAlias>> = {
  nameMapper: { meant: 'prefix', note: 'a NameMapper that prefixes names is prefix here' },
  checkLockSyncedSlaves: 'replication',
  slavesSyncTimeout: { meant: 'replication', note: 'the replicas timeout is replication: { timeout }' },
  timeout: 'commandTimeout',
  shardedSubscriptionMode: {
    meant: 'pubSub',
    note: "shardedSubscriptionMode AUTO, ON, OFF is pubSub 'auto', 'sharded', 'plain'",
  },
};

/** Redisson method parameters a Java user may carry over, and what this package calls them. */
export const PARAMETER_NAMES: Readonly<Record<string, OptionAlias>> = {
  leaseTime: { meant: 'lease', note: "Redisson's leaseTime is lease here, in ms" },
  waitTime: { meant: 'wait', note: "Redisson's waitTime is wait here, in ms" },
  timeout: { meant: 'wait', note: "Redisson's timeout is wait here, in ms" },
  ttl: { meant: 'lease', note: 'a ttl is lease here, in ms' },
  unit: { note: 'there is no unit: every duration is in ms' },
};

/**
 * Refuses anything but an options object of `method` whose names are all in `known`, as core
 * does (the value neither shown nor kept), naming the first unknown one, and what to write
 * instead when it is a Redisson name (`leaseTime` → `lease`). `method` as `'tryLock'`.
 */
export function checkOptionNames(
  options: unknown,
  known: readonly string[],
  method: string,
  renamed: Readonly<Record<string, OptionAlias>> = PARAMETER_NAMES,
): void {
  refuseUnknown(options, known, `the ${method}() options`, renamed);
}

/**
 * Checks `options` and answers the copy it checked, the only one the client may use afterwards:
 * an options object with getters (or a Proxy) could answer the check one value and a later read
 * another, and a caller may change its object after creation, before a lock kind's engine is made.
 */
export function checkOptions(given: RedissonOptions): RedissonOptions {
  checkOptionNames(given, KNOWN, 'createRedisson', CONFIG_NAMES);
  const options = copyOf(given);
  const { redis } = options;
  if (typeof redis !== 'object' || redis === null || typeof redis.evalsha !== 'function') {
    throw new InvalidOptionError('redis', redis, 'an ioredis Redis or Cluster client');
  }
  refuseKeyPrefix(redis);
  // The engine's own checks, run here so that a bad value fails createRedisson, not a later lock().
  if (options.prefix !== undefined) checkPrefix(options.prefix);
  if (options.lockWatchdogTimeout !== undefined) checkTtl(options.lockWatchdogTimeout, 'lockWatchdogTimeout');
  checkOptionalMs(options.fairLockWaitTimeout, 'fairLockWaitTimeout');
  checkOptionalMs(options.commandTimeout, 'commandTimeout');
  if (options.replication !== undefined) checkReplication(options.replication, isCluster(redis));
  checkRetry(options.retry, DEFAULT_RETRY);
  checkPubSub(options.pubSub, redis);
  return options;
}

/** `options` with each known option read once, and `retry` and `replication` copied down to their fields. */
function copyOf(options: RedissonOptions): RedissonOptions {
  const copy: Record<string, unknown> = {};
  for (const name of KNOWN) {
    const value: unknown = options[name as keyof RedissonOptions];
    if (value === undefined) continue;
    const nested =
      (name === 'retry' || name === 'replication') && typeof value === 'object' && value !== null;
    copy[name] = nested ? { ...value } : value;
  }
  return copy as unknown as RedissonOptions;
}

/**
 * Refuses a client with an ioredis `keyPrefix`. ioredis prefixes only the KEYS a script is given;
 * Redisson derives the channels and the side keys named inside its scripts (read-lock timeouts,
 * fair queues) from the full name. A Java client whose NameMapper adds the same prefix then
 * shares the lock hash but not those, and its read unlock deletes the hash under a live Node
 * reader. `prefix` is applied to the name itself, as a NameMapper is, so both sides derive alike.
 * A Cluster keeps it at the top level or under `redisOptions` (ioredis copies one to the other).
 */
function refuseKeyPrefix(redis: RedisClient): void {
  const options = (redis as { options?: ClientOptions }).options;
  const places: [string, unknown][] = [
    ['redis.options.keyPrefix', options?.keyPrefix],
    ['redis.options.redisOptions.keyPrefix', options?.redisOptions?.keyPrefix],
  ];
  for (const [option, keyPrefix] of places) {
    if (typeof keyPrefix !== 'string' || keyPrefix === '') continue;
    throw new InvalidOptionError(
      option,
      keyPrefix,
      'a client without keyPrefix: ioredis prefixes script KEYS but not the channels and side keys ' +
        "Redisson derives from the name, so a Java client would miss them; give it as createRedisson's " +
        '`prefix` option instead',
    );
  }
}

interface ClientOptions {
  readonly keyPrefix?: unknown;
  readonly redisOptions?: { readonly keyPrefix?: unknown };
}

/** Checks an optional duration in ms: a positive integer below 2^31. */
export function checkOptionalMs(value: unknown, name: string): number | undefined {
  return value === undefined ? undefined : checkMs(value, name);
}
