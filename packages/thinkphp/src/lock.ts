import { setTimeout as sleep } from 'node:timers/promises';
import {
  bounded,
  checkFunction,
  checkKey,
  checkMs,
  DEFAULT_COMMAND_TIMEOUT,
  type Lock as HeldLock,
  InvalidOptionError,
  LockBusyError,
  type Locker,
  LockUnavailableError,
  type OptionAlias,
  orDefault,
  type RedisClient,
  refuseUnknown,
} from '@lock/core';
import { ThinkEnv } from './env.js';
import { clientFor, closedReason, closeEnvClients, lockerFor } from './lockers.js';
import { checkSettings, type LockSettings, settingNames } from './settings.js';
import { strictAcquire, strictRelease } from './strict.js';

/** Options of a `Lock`. Give `redis` or `env`. */
export interface LockOptions {
  /** The connection (yours: never closed by the lock). */
  readonly redis?: RedisClient;
  /** ThinkPHP settings (`loadThinkEnv('.env')`): one shared connection per env; close with `Lock.disconnect()`. */
  readonly env?: ThinkEnv;
  /** Lease in whole seconds. Default: the class's `LOCK_EXPIRE` (3). */
  readonly expire?: number;
  /** Attempts per `lock()`. Default: the class's `LOCK_RETRY_MAX` (3). */
  readonly retryMax?: number;
  /** Pause between attempts in seconds. Default: the class's `LOCK_SLEEP` (0.3). */
  readonly sleep?: number;
  /**
   * Reproduce the PHP class bug for bug: its two scripts with this host's clock, release that
   * deletes only an already-expired value (whoever's), `sleep(0.3)` sleeping 0 s. UNSAFE: for
   * teams that need exact parity only. Default: `false`.
   */
  readonly strict?: boolean;
  /**
   * Ms past its timestamp before a key without a TTL is taken over (default mode). Default: `2_000`.
   */
  readonly skewMargin?: number;
  /**
   * How far ahead of the Redis server's clock, in ms, the PHP hosts' clocks may run (default
   * mode). A PHP host reads the deadline against its own `time()`, so one running ahead takes a
   * lock over that much early (B5): the deadline Node writes claims this much more than the
   * key's TTL (rounded up to whole seconds), so such a host reads it as past only after the
   * handle's validity has ended. `0` writes what the PHP class writes, `now + LOCK_EXPIRE + 1`.
   * Default: `2_000`.
   */
  readonly peerClockAhead?: number;
  /**
   * The host clock in whole Unix seconds, as PHP's `time()`; strict mode only. Each answer must be
   * an integer from 1e9 to below 1e10, or `lock()`/`unlock()` reject with `InvalidOptionError`
   * before running a script. Default: from `Date.now()`.
   */
  readonly time?: () => number;
  /**
   * How long one round trip to Redis may take, in ms: an attempt that Redis does not answer in
   * time (down, frozen, partitioned) makes `lock()` reject with `LockUnavailableError`, and so
   * does `unlock()`. Default: `500`.
   */
  readonly commandTimeout?: number;
}

const OPTION_NAMES = [
  'redis',
  'env',
  'expire',
  'retryMax',
  'sleep',
  'strict',
  'skewMargin',
  'peerClockAhead',
  'time',
  'commandTimeout',
];

const IN_SECONDS = { meant: 'expire', note: 'expire is in whole seconds' };
const SLEEP_SECONDS = { meant: 'sleep', note: 'sleep is in seconds' };

/** Names a PHP (or Redisson, or redlock) user may reach for, and the option this class calls it. */
const RENAMED: Readonly<Record<string, OptionAlias>> = {
  LOCK_EXPIRE: IN_SECONDS,
  lockExpire: IN_SECONDS,
  ttl: IN_SECONDS,
  lease: IN_SECONDS,
  timeout: IN_SECONDS,
  LOCK_RETRY_MAX: 'retryMax',
  retry: 'retryMax',
  retries: 'retryMax',
  retryCount: 'retryMax',
  LOCK_SLEEP: SLEEP_SECONDS,
  retryDelay: SLEEP_SECONDS,
  wait: { note: 'a wait is retryMax attempts, sleep seconds apart' },
};

/** Refuses, before anything is written, an option this class does not have, naming it and what to use instead. */
function checkOptions(options: unknown): asserts options is LockOptions {
  refuseUnknown(options, OPTION_NAMES, 'the Lock options', RENAMED);
  const { redis, env, strict, time, commandTimeout, skewMargin, peerClockAhead } = options as LockOptions;
  if (redis === undefined && env === undefined) {
    throw new InvalidOptionError('redis', undefined, 'an ioredis client, or an `env` from loadThinkEnv()');
  }
  if (
    redis !== undefined &&
    (typeof redis !== 'object' || redis === null || typeof redis.evalsha !== 'function')
  )
    throw new InvalidOptionError('redis', redis, 'an ioredis Redis or Cluster client');
  if (env !== undefined && !(env instanceof ThinkEnv))
    throw new InvalidOptionError('env', env, 'a ThinkEnv from loadThinkEnv() or parseThinkEnv()');
  if (strict !== undefined && typeof strict !== 'boolean')
    throw new InvalidOptionError('strict', strict, 'a boolean');
  if (time !== undefined && typeof time !== 'function')
    throw new InvalidOptionError('time', time, 'a function answering whole Unix seconds');
  // Each mode has clock options the other never reads: given there, they would be believed in.
  const modeOnly: [string, unknown, string][] = strict
    ? [
        ['skewMargin', skewMargin, 'nothing in strict mode, which compares as the PHP class does'],
        ['peerClockAhead', peerClockAhead, 'nothing in strict mode, which writes what the PHP class writes'],
      ]
    : [['time', time, 'nothing outside strict mode, which reads the Redis server clock']];
  for (const [name, value, expected] of modeOnly) {
    if (value !== undefined) throw new InvalidOptionError(name, value, expected);
  }
  if (commandTimeout !== undefined) checkMs(commandTimeout, 'commandTimeout');
}

/**
 * The ThinkPHP service `Lock` of seed 001, sharing keys with PHP processes that run it. By
 * default it writes what they read (integer Unix seconds `now + LOCK_EXPIRE + 1`, TTL
 * `LOCK_EXPIRE + 1`) through the legacy protocol, with server time, owner-checked release,
 * no takeover of a key that has a TTL, and a real jittered pause between attempts.
 */
export class Lock {
  /** Lease in seconds. */
  static LOCK_EXPIRE = 3;
  /** Attempts per `lock()`. */
  static LOCK_RETRY_MAX = 3;
  /** Pause between attempts, in seconds. */
  static LOCK_SLEEP = 0.3;

  /** Per-instance overrides; they start from the options or the class's constants. */
  LOCK_EXPIRE: number;
  LOCK_RETRY_MAX: number;
  LOCK_SLEEP: number;

  private readonly redis: RedisClient;
  /** The legacy-protocol locker of the default mode; null in strict mode. */
  private readonly locker: Locker | null;
  private readonly time: () => number;
  private readonly commandTimeout: number;
  private held: HeldLock | null = null;

  constructor(
    readonly key: string,
    options: LockOptions,
  ) {
    // Strict mode hands the key to the seed's scripts as is: "" or a number would be locked too.
    checkKey(key);
    checkOptions(options);
    const constants = new.target as typeof Lock;
    // A null is not left out: it is kept, and refused by checkSettings.
    this.LOCK_EXPIRE = orDefault(options.expire, constants.LOCK_EXPIRE);
    this.LOCK_RETRY_MAX = orDefault(options.retryMax, constants.LOCK_RETRY_MAX);
    this.LOCK_SLEEP = orDefault(options.sleep, constants.LOCK_SLEEP);
    checkSettings(this.settings(), settingNames(options));
    this.commandTimeout = options.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT;
    this.redis = options.redis ?? clientFor(options.env!);
    this.locker = options.strict ? null : lockerFor(this.redis, options, this.commandTimeout);
    this.time = options.time ?? (() => Math.floor(Date.now() / 1000));
  }

  /** The engine's handle while this lock holds (default mode): its `signal`, `fence`, `validUntil`. */
  get handle(): HeldLock | null {
    return this.held;
  }

  /**
   * Up to `LOCK_RETRY_MAX` attempts; true when acquired. In default mode, an earlier `unlock()`
   * that rejected is retried first.
   */
  async lock(): Promise<boolean> {
    return (await this.refusedOr(this.attempts())) === null;
  }

  /** Default mode: releases this lock's own hold only. Strict mode: the PHP release. */
  unlock(): Promise<void> {
    return this.refusedOr(this.release());
  }

  /** `unlock()`, failing as the connection does. */
  private async release(): Promise<void> {
    if (!this.locker) {
      await bounded(
        strictRelease(this.redis, this.key, this.now()),
        this.commandTimeout,
        this.key,
        'release',
      );
      return;
    }
    const held = this.held;
    if (!held) return;
    // Kept until the release succeeds: one that Redis did not answer is retried by the next
    // unlock() or lock().
    await held.release();
    if (this.held === held) this.held = null;
  }

  /**
   * Runs `fn` holding the lock and always unlocks; rejects with `LockBusyError` when `lock()`
   * fails. `fn`'s own error is never replaced by an unlock error, nor its result by an unlock
   * Redis did not answer (`LockUnavailableError`).
   */
  static async wrap<T>(
    this: typeof Lock,
    key: string,
    fn: (lock: Lock) => Promise<T> | T,
    options: LockOptions,
  ): Promise<T> {
    checkFunction(fn, 'fn', 'a function to run under the lock');
    const lock = new this(key, options);
    const refused = await lock.refusedOr(lock.attempts());
    if (refused) throw refused;
    const [outcome] = await Promise.allSettled([(async () => fn(lock))()]);
    const unlocked = lock.unlock();
    if (outcome.status === 'rejected') {
      await unlocked.catch(() => {});
      throw outcome.reason;
    }
    // fn ran under the lock: a caller told it failed would run it again. An unlock Redis did not
    // answer leaves the key to its lease, as when fn throws.
    await unlocked.catch((error: unknown) => {
      if (!(error instanceof LockUnavailableError)) throw error;
    });
    return outcome.value;
  }

  /** Closes the connections opened for `{ env }` locks. */
  static disconnect(): Promise<void> {
    return closeEnvClients();
  }

  /** `lock()`: null when acquired, else the last attempt's refusal, with the holder's ms left. */
  private async attempts(): Promise<LockBusyError | null> {
    const settings = checkSettings(this.settings());
    if (!this.locker) return this.lockStrict(settings);
    // An unlock() that failed left its hold here to be retried: finish it first. Over a key it
    // still holds, the attempts would be refused by this very lock, and a caller told false does
    // not unlock: the key would stay until its lease ends. Redis still unreachable, this rejects
    // and keeps the hold.
    if (this.held?.released) await this.unlock();
    return this.lockSafely(this.locker, settings);
  }

  /**
   * Rejects as `pending` does, but with the reason when the env's connection is closed for good
   * (its server refused it, or `Lock.disconnect()`): its commands then fail only with ioredis'
   * "Connection is closed."
   */
  private async refusedOr<T>(pending: Promise<T>): Promise<T> {
    try {
      return await pending;
    } catch (error) {
      throw closedReason(this.redis) ?? error;
    }
  }

  private settings(): LockSettings {
    return { expire: this.LOCK_EXPIRE, retryMax: this.LOCK_RETRY_MAX, sleep: this.LOCK_SLEEP };
  }

  /**
   * `time()`, refused unless whole Unix seconds: the scripts compare it with PHP's values, so a
   * clock in ms makes every live PHP lock look expired (two holders), and a non-number makes
   * the script fail or store "nan".
   */
  private now(): number {
    const now = this.time();
    if (!Number.isSafeInteger(now) || now < 1e9 || now >= 1e10) {
      throw new InvalidOptionError(
        'time',
        now,
        'time() to answer whole Unix seconds, from 1e9 to below 1e10 (not ms, as Date.now() gives)',
      );
    }
    return now;
  }

  private async lockSafely(
    locker: Locker,
    { expire, retryMax, sleep: pause }: LockSettings,
  ): Promise<LockBusyError | null> {
    for (let attempt = 1; ; attempt++) {
      // Not tryAcquire(), whose null drops the holder's ms left that the refusal carries.
      const refused = await locker
        // A fresh owner per call: two Lock objects in one call chain must not re-enter each other,
        // and a hold lost to a master change is then released by its name (an explicit owner's
        // is not: another call might hold under it), so unlock() frees a key that survived.
        .acquire(this.key, { ttl: expire * 1_000, reentrant: false, wait: 0 })
        .then(
          (held) => {
            this.held = held;
            return null;
          },
          (error: unknown) => {
            if (error instanceof LockBusyError) return error;
            throw error;
          },
        );
      if (!refused || attempt >= retryMax) return refused;
      // ±25 % so that PHP and Node contenders do not retry in lockstep.
      await sleep(pause * 1_000 * (0.75 + Math.random() * 0.5));
    }
  }

  private async lockStrict({ expire, retryMax, sleep: pause }: LockSettings): Promise<LockBusyError | null> {
    for (let attempt = 1; ; attempt++) {
      const now = this.now();
      const answer = await bounded(
        strictAcquire(this.redis, this.key, expire, now),
        this.commandTimeout,
        this.key,
        'acquire',
      );
      if (answer.code === 0) return null;
      if (attempt >= retryMax)
        // Codes 1 and 3 cannot happen inside a script: for them Redis could not say.
        return new LockBusyError(this.key, answer.code === 2 ? answer.remaining : -1);
      // PHP's sleep() takes whole seconds: sleep(0.3) sleeps 0 s (B7).
      if (answer.code === 2) await sleep(Math.trunc(pause) * 1_000);
    }
  }
}
