import {
  AcquireTimeoutError,
  checkKey,
  checkTtl,
  InvalidOptionError,
  LockBusyError,
  MAX_TTL,
} from '@lock/core';
import type { AcquireRequest, ClientCore } from './client.js';
import type { LockKind } from './kinds.js';
import { checkOptionNames, PARAMETER_NAMES } from './options.js';
import { checkThreadId, type ThreadOptions, threadOf } from './thread.js';

/** Options of `lock()`. */
export interface LockOptions extends ThreadOptions {
  /**
   * Lease in ms: the lock expires after it unless unlocked first, and is not renewed (Redisson's
   * `leaseTime`). Default: none: a `lockWatchdogTimeout` (30 s) lease renewed every third of it
   * while this process holds the lock.
   */
  readonly lease?: number;
  /**
   * Stops a waiting call: it rejects with `LockAbortError` and leaves nothing behind in Redis.
   * While Redis does not answer, it settles once the attempt in flight has timed out and, for a
   * fair lock, its queue cleanup too: up to about two `commandTimeout`s after the abort. Default: none.
   */
  readonly signal?: AbortSignal;
}

/** Options of `tryLock()`. */
export interface TryLockOptions extends LockOptions {
  /** How long to wait for a busy lock, in ms (Redisson's `waitTime`). Default: `0`: one attempt. */
  readonly wait?: number;
}

const THREAD_OPTIONS = ['threadId'];
const LOCK_OPTIONS = ['lease', 'signal', 'threadId'];
const TRY_LOCK_OPTIONS = ['wait', ...LOCK_OPTIONS];
/**
 * Redisson's names of a wait, given to `method` (`lock`, `lockAndGetToken`), which waits as long
 * as it takes: pointed to its `try` twin, whose `wait` bounds it.
 */
function boundedWaitNames(method: string) {
  const twin = `try${method[0]!.toUpperCase()}${method.slice(1)}`;
  const bounded = {
    note: `${method}() waits as long as it takes: for a bounded wait, call ${twin}({ wait }) instead`,
  };
  return { ...PARAMETER_NAMES, wait: bounded, waitTime: bounded, timeout: bounded };
}

function checkWait(wait: unknown): number {
  if (wait === undefined) return 0;
  if (typeof wait !== 'number' || !Number.isInteger(wait) || wait < 0 || wait > MAX_TTL) {
    throw new InvalidOptionError('wait', wait, `a whole number of ms from 0 (one attempt) to ${MAX_TTL}`);
  }
  return wait;
}

/** The thread a call without acquisition acts as, after checking its options. */
function threadFor(name: string, method: string, options: ThreadOptions): number {
  checkOptionNames(options, THREAD_OPTIONS, method);
  return threadOf(name, method, options.threadId);
}

/**
 * Redisson's RLock on a Node "thread" (a `redisson.run(fn)` call, or an explicit `threadId`):
 * re-entrant per thread, exclusive across threads, processes and Java clients.
 */
export class RLock {
  constructor(
    protected readonly client: ClientCore,
    /** The lock's name as given to `getLock` (without the client's prefix). */
    readonly name: string,
    protected readonly kind: LockKind = 'lock',
  ) {
    // The name as given: after the prefix, getLock(undefined) would lock the key "undefined".
    checkKey(name);
    client.protocols[kind].validate(client.resource(name), client.redis.isCluster);
  }

  /** Waits as long as it takes for the lock (Java's `lock()` / `lock(leaseTime)`). */
  async lock(options: LockOptions = {}): Promise<void> {
    await this.take('lock', options, Number.POSITIVE_INFINITY);
  }

  /** One attempt, or waits up to `wait` ms: true when the lock was taken (Java's `tryLock`). */
  async tryLock(options: TryLockOptions = {}): Promise<boolean> {
    try {
      await this.take('tryLock', options);
      return true;
    } catch (error) {
      if (error instanceof LockBusyError || error instanceof AcquireTimeoutError) return false;
      throw error;
    }
  }

  /**
   * Gives up one hold of the calling thread; the last one frees the lock and wakes waiters.
   * Throws `NotOwnerError` when the thread holds none (Java's IllegalMonitorStateException).
   */
  async unlock(options: ThreadOptions = {}): Promise<void> {
    await this.client.unlock(this.kind, this.name, threadFor(this.name, 'unlock', options));
  }

  /** Frees the lock whoever holds it; true when it was locked. */
  forceUnlock(): Promise<boolean> {
    return this.client.call(
      this.name,
      'forceUnlock',
      this.protocol.forceUnlock(this.client.redis, this.resource),
    );
  }

  async isLocked(): Promise<boolean> {
    return (await this.readState('isLocked')).held;
  }

  async isHeldByCurrentThread(options: ThreadOptions = {}): Promise<boolean> {
    return (await this.holdCount(threadFor(this.name, 'isHeldByCurrentThread', options))) > 0;
  }

  /** Whether thread `threadId` holds the lock (Java's `isHeldByThread`); a missing id is refused, never read as the current thread. */
  async isHeldByThread(threadId: number): Promise<boolean> {
    return (await this.holdCount(checkThreadId(threadId))) > 0;
  }

  /** How many holds the calling thread has (0 when none). */
  async getHoldCount(options: ThreadOptions = {}): Promise<number> {
    return this.holdCount(threadFor(this.name, 'getHoldCount', options));
  }

  /** Remaining lease in ms; -2 when not locked, -1 when the lock has no TTL (as PTTL). */
  remainTimeToLive(): Promise<number> {
    return this.client.call(this.name, 'remainTimeToLive', this.client.redis.pttl(this.resource));
  }

  protected get resource(): string {
    return this.client.resource(this.name);
  }

  protected get protocol() {
    return this.client.protocols[this.kind];
  }

  /** Not named `inspect`: chai's printer calls a method of that name, and would send this read. */
  protected readState(operation: string) {
    return this.client.call(this.name, operation, this.protocol.inspect(this.client.redis, this.resource));
  }

  /**
   * One acquisition by `method`: `lock`-like methods wait as long as it takes (`wait` given),
   * `tryLock`-like ones as their `wait` option says.
   */
  protected take(method: string, options: TryLockOptions, wait?: number) {
    return this.client.acquire(this.kind, this.name, this.request(method, options, wait));
  }

  private request(method: string, options: TryLockOptions, wait: number | undefined): AcquireRequest {
    if (wait === undefined) checkOptionNames(options, TRY_LOCK_OPTIONS, method);
    else checkOptionNames(options, LOCK_OPTIONS, method, boundedWaitNames(method));
    const lease = options.lease === undefined ? undefined : checkTtl(options.lease, 'lease');
    return {
      wait: wait ?? checkWait(options.wait),
      ...(lease === undefined ? {} : { lease }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      thread: threadOf(this.name, method, options.threadId),
    };
  }

  private async holdCount(thread: number): Promise<number> {
    const field = this.protocol.field(this.client.owner(thread));
    const count = await this.client.call(
      this.name,
      'getHoldCount',
      this.client.redis.hget(this.resource, field),
    );
    return Number(count) || 0;
  }
}

/** Redisson's RFencedLock: an RLock whose every acquisition also draws a strictly increasing token. */
export class RFencedLock extends RLock {
  constructor(client: ClientCore, name: string) {
    super(client, name, 'fenced');
  }

  /** Waits for the lock and answers this acquisition's fencing token. */
  async lockAndGetToken(options: LockOptions = {}): Promise<number> {
    return (await this.take('lockAndGetToken', options, Number.POSITIVE_INFINITY)).fence;
  }

  /** Like `tryLock`, answering the token, or null when the lock was not taken. */
  async tryLockAndGetToken(options: TryLockOptions = {}): Promise<number | null> {
    try {
      return (await this.take('tryLockAndGetToken', options)).fence;
    } catch (error) {
      if (error instanceof LockBusyError || error instanceof AcquireTimeoutError) return null;
      throw error;
    }
  }

  /** The last token handed out, or null before the first acquisition. */
  async getToken(): Promise<number | null> {
    return (await this.readState('getToken')).fence;
  }
}

/**
 * Redisson's RFairLock: waiters get the lock in the order they asked for it, Java and Node
 * waiters alike. A waiter that gives up (timeout, abort, shutdown) leaves the queue at once.
 */
export class RFairLock extends RLock {
  constructor(client: ClientCore, name: string) {
    super(client, name, 'fair');
  }
}

/** Redisson's RReadWriteLock: one hash, a shared read half and an exclusive write half. */
export class RReadWriteLock {
  private readonly read: RLock;
  private readonly write: RLock;

  constructor(
    client: ClientCore,
    readonly name: string,
  ) {
    this.read = new RLock(client, name, 'read');
    this.write = new RLock(client, name, 'write');
  }

  /** Shared with other readers; the thread holding the write lock may take it too (downgrade). */
  readLock(): RLock {
    return this.read;
  }

  /** Exclusive; a thread holding only read locks cannot upgrade (it waits like anyone else). */
  writeLock(): RLock {
    return this.write;
  }
}
