import { AcquireTimeoutError, LockBusyError } from '@lock/core';
import type { AcquireRequest, ClientCore } from './client.js';
import type { LockKind } from './kinds.js';
import { checkMs } from './options.js';
import type { ThreadOptions } from './thread.js';

/** Options of `lock()`. */
export interface LockOptions extends ThreadOptions {
  /**
   * Lease in ms: the lock expires after it unless unlocked first, and is not renewed (Redisson's
   * `leaseTime`). Default: none: a `lockWatchdogTimeout` (30 s) lease renewed every third of it
   * while this process holds the lock.
   */
  readonly lease?: number;
  /** Stops a waiting call: it rejects with `LockAbortError` and leaves nothing behind in Redis. Default: none. */
  readonly signal?: AbortSignal;
}

/** Options of `tryLock()`. */
export interface TryLockOptions extends LockOptions {
  /** How long to wait for a busy lock, in ms (Redisson's `waitTime`). Default: `0`: one attempt. */
  readonly wait?: number;
}

function checkWait(wait: unknown): number {
  return wait === undefined || wait === 0 ? 0 : (checkMs(wait, 'wait') as number);
}

/**
 * Redisson's RLock on a Node "thread" (an async call chain, or an explicit `threadId`):
 * re-entrant per thread, exclusive across threads, processes and Java clients.
 */
export class RLock {
  constructor(
    protected readonly client: ClientCore,
    /** The lock's name as given to `getLock` (without the client's prefix). */
    readonly name: string,
    protected readonly kind: LockKind = 'lock',
  ) {
    client.protocols[kind].validate(client.resource(name), client.redis.isCluster);
  }

  /** Waits as long as it takes for the lock (Java's `lock()` / `lock(leaseTime)`). */
  async lock(options: LockOptions = {}): Promise<void> {
    await this.take(options, Number.POSITIVE_INFINITY);
  }

  /** One attempt, or waits up to `wait` ms: true when the lock was taken (Java's `tryLock`). */
  async tryLock(options: TryLockOptions = {}): Promise<boolean> {
    try {
      await this.take(options, checkWait(options.wait));
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
  unlock(options: ThreadOptions = {}): Promise<void> {
    return this.client.unlock(this.kind, this.name, options.threadId);
  }

  /** Frees the lock whoever holds it; true when it was locked. */
  forceUnlock(): Promise<boolean> {
    return this.protocol.forceUnlock(this.client.redis, this.resource);
  }

  async isLocked(): Promise<boolean> {
    return (await this.protocol.inspect(this.client.redis, this.resource)).held;
  }

  async isHeldByCurrentThread(options: ThreadOptions = {}): Promise<boolean> {
    return (await this.getHoldCount(options)) > 0;
  }

  isHeldByThread(threadId: number): Promise<boolean> {
    return this.isHeldByCurrentThread({ threadId });
  }

  /** How many holds the calling thread has (0 when none). */
  async getHoldCount(options: ThreadOptions = {}): Promise<number> {
    const owner = this.client.currentOwner(this.kind, this.name, options.threadId);
    return Number(await this.client.redis.hget(this.resource, this.protocol.field(owner))) || 0;
  }

  /** Remaining lease in ms; -2 when not locked, -1 when the lock has no TTL (as PTTL). */
  remainTimeToLive(): Promise<number> {
    return this.client.redis.pttl(this.resource);
  }

  protected get resource(): string {
    return this.client.resource(this.name);
  }

  protected get protocol() {
    return this.client.protocols[this.kind];
  }

  protected take(options: LockOptions, wait: number) {
    return this.client.acquire(this.kind, this.name, this.request(options, wait));
  }

  protected request(options: LockOptions, wait: number): AcquireRequest {
    return {
      wait,
      ...(options.threadId === undefined ? {} : { threadId: options.threadId }),
      ...(options.lease === undefined ? {} : { lease: checkMs(options.lease, 'lease') }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    };
  }
}

/** Redisson's RFencedLock: an RLock whose every acquisition also draws a strictly increasing token. */
export class RFencedLock extends RLock {
  constructor(client: ClientCore, name: string) {
    super(client, name, 'fenced');
  }

  /** Waits for the lock and answers this acquisition's fencing token. */
  async lockAndGetToken(options: LockOptions = {}): Promise<number> {
    return (await this.take(options, Number.POSITIVE_INFINITY)).fence;
  }

  /** Like `tryLock`, answering the token, or null when the lock was not taken. */
  async tryLockAndGetToken(options: TryLockOptions = {}): Promise<number | null> {
    try {
      return (await this.take(options, checkWait(options.wait))).fence;
    } catch (error) {
      if (error instanceof LockBusyError || error instanceof AcquireTimeoutError) return null;
      throw error;
    }
  }

  /** The last token handed out, or null before the first acquisition. */
  async getToken(): Promise<number | null> {
    return (await this.protocol.inspect(this.client.redis, this.resource)).fence;
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
