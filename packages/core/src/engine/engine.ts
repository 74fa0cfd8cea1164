import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { LockBackend } from '../backend.js';
import { currentChain, newChain, runWithChain } from '../chain.js';
import {
  AcquireTimeoutError,
  InvalidOptionError,
  LockAbortError,
  LockBusyError,
  LockerClosedError,
  LockLostError,
  type LockLostReason,
  QuorumError,
} from '../errors.js';
import type { ReleaseReply } from '../protocol.js';
import type { AcquireOptions, Lock, Locker, LockInspection, RetryOptions } from '../types.js';
import { backoff } from './backoff.js';
import { channels, type LockEventName } from './events.js';
import { LockHandle } from './handle.js';
import { Hold, holdId } from './hold.js';
import {
  ACQUIRE_OPTIONS,
  checkBoolean,
  checkClock,
  checkKey,
  checkOwner,
  checkPrefix,
  checkRetry,
  checkSignal,
  checkTtl,
  checkWait,
  DEFAULT_RETRY,
  DEFAULT_TTL,
  DEFAULT_WAIT,
  refuseUnknown,
} from './options.js';
import { pause } from './pause.js';
import { type Waiter, WaitQueues } from './waiters.js';
import { Watchdog } from './watchdog.js';

/** Defaults shared by every acquisition of one locker. */
export interface EngineOptions {
  /** Prepended to every key to form the Redis resource name. Default: `'lock:'`. */
  readonly prefix?: string;
  /** Default lease in ms for acquisitions that give none; such locks are renewed. Default: `30_000`. */
  readonly ttl?: number;
  /** Default wait for a busy lock in ms. Default: `10_000`. */
  readonly wait?: number;
  /** Whether locks without a fixed lease are renewed by the watchdog. Default: `true`. */
  readonly renew?: boolean;
  /** Backoff while waiting. Default: `{ base: 50, max: 1_000, jitter: 0.5 }`. */
  readonly retry?: RetryOptions;
  /** Monotonic clock in ms used for deadlines (injectable for tests). Default: `performance.now`. */
  readonly clock?: () => number;
  /** This locker's identity, the first half of every owner it makes. Default: a random UUID. */
  readonly id?: string;
}

export const ENGINE_OPTIONS: readonly (keyof EngineOptions)[] = [
  'prefix',
  'ttl',
  'wait',
  'renew',
  'retry',
  'clock',
  'id',
];

interface Request {
  readonly key: string;
  readonly resource: string;
  readonly owner: string;
  readonly ttl: number;
  readonly wait: number;
  readonly renew: boolean;
  readonly retry: Required<RetryOptions>;
  readonly signal: AbortSignal | undefined;
}

/**
 * Turns a backend (a protocol on a topology) into a `Locker`: validation, waiting woken by
 * release messages, handles, re-entrancy, the watchdog, events and typed errors, once for
 * every protocol and topology.
 */
export function createEngine(backend: LockBackend, options: EngineOptions = {}): Locker {
  return new Engine(backend, options);
}

class Engine implements Locker {
  readonly id: string;
  private readonly prefix: string;
  private readonly ttl: number;
  private readonly wait: number;
  private readonly renew: boolean;
  private readonly retry: Required<RetryOptions>;
  private readonly clock: () => number;
  private readonly holds = new Map<string, Hold>();
  private readonly queues: WaitQueues;
  private readonly watchdog: Watchdog;
  private readonly closing = new AbortController();

  constructor(
    private readonly backend: LockBackend,
    options: EngineOptions,
  ) {
    refuseUnknown(options, ENGINE_OPTIONS, 'the locker options');
    const given: EngineOptions = options;
    this.prefix = given.prefix === undefined ? 'lock:' : checkPrefix(given.prefix);
    this.ttl = given.ttl === undefined ? DEFAULT_TTL : checkTtl(given.ttl);
    this.wait = given.wait === undefined ? DEFAULT_WAIT : checkWait(given.wait);
    this.renew = checkBoolean(given.renew, 'renew') ?? true;
    this.retry = checkRetry(given.retry, DEFAULT_RETRY);
    this.clock = checkClock(given.clock);
    this.id = given.id === undefined ? randomUUID() : checkOwner(given.id, 'id');
    this.queues = new WaitQueues(backend);
    // Every waiter listens on it while it sleeps (and stops when it wakes): many waiters are normal.
    setMaxListeners(0, this.closing.signal);
    this.watchdog = new Watchdog(backend, this.clock, {
      renewed: (hold) => this.emit('extend', hold, () => ({ validUntil: hold.validUntil, renewal: true })),
      lost: (hold, reason, cause) => this.lose(hold, reason, cause),
    });
  }

  async acquire(key: string, options: AcquireOptions = {}): Promise<Lock> {
    return this.run(this.request(key, options));
  }

  async tryAcquire(key: string, options: Omit<AcquireOptions, 'wait'> = {}): Promise<Lock | null> {
    refuseUnknown(
      options,
      ACQUIRE_OPTIONS.filter((name) => name !== 'wait'),
      'tryAcquire options',
    );
    try {
      return await this.run(this.request(key, { ...options, wait: 0 }));
    } catch (error) {
      if (error instanceof LockBusyError) return null;
      throw error;
    }
  }

  using<T>(key: string, options: AcquireOptions, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  using<T>(key: string, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  using<T>(
    key: string,
    optionsOrFn: AcquireOptions | ((lock: Lock) => Promise<T> | T),
    maybeFn?: (lock: Lock) => Promise<T> | T,
  ): Promise<T> {
    const [options, fn] = typeof optionsOrFn === 'function' ? [{}, optionsOrFn] : [optionsOrFn, maybeFn];
    if (typeof fn !== 'function')
      return Promise.reject(new InvalidOptionError('fn', fn, 'a function to run'));
    return runWithChain(currentChain() ?? newChain(), async () => {
      const lock = await this.acquire(key, options);
      let result: T;
      try {
        result = await fn(lock);
      } catch (error) {
        await lock.release().catch(() => {});
        throw error;
      }
      await lock.release();
      return result;
    });
  }

  async inspect(key: string): Promise<LockInspection> {
    const resource = this.resourceOf(checkKey(key));
    return { ...(await this.backend.inspect(resource)), protocol: this.backend.protocol.name };
  }

  async isLocked(key: string): Promise<boolean> {
    return (await this.inspect(key)).held;
  }

  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort(new LockerClosedError());
    this.watchdog.stop();
    const held = [...this.holds.values()];
    // Handles must stop believing before Redis frees the keys to others.
    for (const hold of held) this.lose(hold, 'closed');
    await Promise.allSettled(
      held.flatMap((hold) =>
        Array.from({ length: hold.handles }, () =>
          this.backend.release(hold.resource, hold.owner, hold.token),
        ),
      ),
    );
    await this.backend.close();
  }

  assertHeld(hold: Hold): void {
    if (!hold.lost && this.clock() >= hold.validUntil) this.lose(hold, 'expired');
    if (hold.lost) throw hold.lost;
  }

  async extend(hold: Hold, ttl: number | undefined): Promise<void> {
    const lease = ttl === undefined ? hold.ttl : checkTtl(ttl);
    this.assertHeld(hold);
    const sentAt = this.clock();
    const result = await this.backend.extend(hold.resource, hold.owner, hold.token, lease);
    if (hold.lost) throw hold.lost;
    if (!result) {
      this.lose(hold, 'taken');
      throw hold.lost;
    }
    hold.token = result.token;
    hold.ttl = lease;
    hold.renewedAt = sentAt;
    hold.validUntil = sentAt + result.validity;
    this.watchdog.reschedule(hold);
    this.emit('extend', hold, () => ({ validUntil: hold.validUntil, renewal: false }));
  }

  async release(hold: Hold): Promise<ReleaseReply> {
    hold.handles -= 1;
    // A lost hold sends nothing: the same owner may hold the key again by now, and an
    // owner-checked release cannot tell that newer hold from this one. The key expires by its TTL.
    if (hold.lost) {
      if (hold.handles === 0) this.forget(hold);
      return 'not-owner';
    }
    let result: ReleaseReply;
    try {
      result = await this.backend.release(hold.resource, hold.owner, hold.token);
    } finally {
      if (hold.handles === 0) this.forget(hold);
    }
    this.emit('release', hold, () => ({ held: this.clock() - hold.acquiredAt, result }));
    return result;
  }

  private request(key: string, options: AcquireOptions): Request {
    checkKey(key);
    refuseUnknown(options, ACQUIRE_OPTIONS, 'the acquire options');
    const given: AcquireOptions = options;
    const resource = this.resourceOf(key);
    this.backend.protocol.validate(resource, this.backend.cluster);
    const fixedLease = given.ttl !== undefined;
    return {
      key,
      resource,
      owner:
        given.owner === undefined ? `${this.id}:${currentChain() ?? newChain()}` : checkOwner(given.owner),
      ttl: given.ttl === undefined ? this.ttl : checkTtl(given.ttl),
      wait: given.wait === undefined ? this.wait : checkWait(given.wait),
      renew: checkBoolean(given.renew, 'renew') ?? (this.renew && !fixedLease),
      retry: checkRetry(given.retry, this.retry),
      signal: checkSignal(given.signal),
    };
  }

  private resourceOf(key: string): string {
    return this.prefix + key;
  }

  /** The acquire loop: attempt, and while refused wait for a release message, the backoff or the holder's expiry. */
  private async run(request: Request): Promise<Lock> {
    if (this.closing.signal.aborted) throw new LockerClosedError();
    const signal = request.signal
      ? AbortSignal.any([request.signal, this.closing.signal])
      : this.closing.signal;
    const started = this.clock();
    const waiter: Waiter = { notified: false, wake: undefined };
    const context = { wait: request.wait };
    let channel: string | undefined;
    let attempts = 0;
    let acquired = false;
    let lastFailure: QuorumError | undefined;
    try {
      for (;;) {
        if (signal.aborted) throw signal.reason;
        attempts += 1;
        waiter.notified = false;
        const sentAt = this.clock();
        let attempt: Awaited<ReturnType<LockBackend['acquire']>>;
        try {
          attempt = await this.backend.acquire(request.resource, request.owner, request.ttl, context);
        } catch (error) {
          // RedLock heard from too few masters: retry while the wait lasts, as a refusal would be.
          if (!(error instanceof QuorumError) || request.wait === 0) throw error;
          lastFailure = error;
          attempt = { acquired: false, remaining: -1 };
        }
        let remaining: number;
        if (attempt.acquired) {
          if (!signal.aborted && this.clock() < sentAt + attempt.validity) {
            acquired = true;
            return this.grant(request, attempt, sentAt, started, attempts);
          }
          await this.backend.release(request.resource, request.owner, attempt.token).catch(() => {});
          if (signal.aborted) throw signal.reason;
          // The reply came back after the lease it granted could have ended: never hand that out.
          remaining = -1;
        } else {
          remaining = attempt.remaining;
        }
        const waited = this.clock() - started;
        if (request.wait === 0) throw new LockBusyError(request.key, remaining);
        if (waited >= request.wait)
          throw new AcquireTimeoutError(
            request.key,
            Math.round(waited),
            attempts,
            remaining,
            lastFailure && { cause: lastFailure },
          );
        if (channel === undefined) {
          const joined = await this.queues.join(request.resource, request.owner, waiter);
          channel = joined.channel;
          if (joined.subscribed) continue;
        }
        if (waiter.notified) continue;
        const untilExpiry = remaining > 0 ? remaining + 1 : Number.POSITIVE_INFINITY;
        const delay = Math.min(backoff(attempts - 2, request.retry), request.wait - waited, untilExpiry);
        await pause(Math.ceil(delay), signal, (wake) => {
          waiter.wake = wake;
          return () => {
            waiter.wake = undefined;
          };
        });
      }
    } catch (error) {
      if (error === signal.reason && !(error instanceof LockerClosedError)) {
        throw new LockAbortError(request.key, error);
      }
      throw error;
    } finally {
      if (channel !== undefined) this.queues.leave(channel, waiter);
      if (!acquired && attempts > 0 && request.wait > 0) {
        await this.backend.abandon?.(request.resource, request.owner, context).catch(() => {});
      }
    }
  }

  private grant(
    request: Request,
    reply: { fence: number; holds: number; token: string; validity: number },
    sentAt: number,
    started: number,
    attempts: number,
  ): Lock {
    const id = holdId(request.resource, request.owner);
    const existing = this.holds.get(id);
    let hold: Hold;
    if (existing && !existing.lost && reply.holds > 1) {
      hold = existing;
      hold.handles += 1;
      hold.token = reply.token;
      hold.renew ||= request.renew;
      hold.ttl = Math.max(hold.ttl, request.ttl);
      hold.validUntil = Math.max(hold.validUntil, sentAt + reply.validity);
    } else {
      hold = new Hold(
        request.key,
        request.resource,
        request.owner,
        reply.token,
        request.ttl,
        request.renew,
        sentAt + reply.validity,
        sentAt,
        this.clock(),
      );
      this.holds.set(id, hold);
    }
    this.watchdog.watch(hold);
    this.emit('acquire', hold, () => ({
      fence: reply.fence,
      holds: reply.holds,
      waited: this.clock() - started,
      attempts,
    }));
    return new LockHandle(this, hold, reply.fence, reply.holds);
  }

  private lose(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (hold.lost) return;
    hold.lose(new LockLostError(hold.key, reason, cause === undefined ? undefined : { cause }));
    this.watchdog.forget(hold);
    if (this.holds.get(hold.id) === hold) this.holds.delete(hold.id);
    this.emit('lost', hold, () => ({ reason, error: hold.lost }));
  }

  private forget(hold: Hold): void {
    this.watchdog.forget(hold);
    if (this.holds.get(hold.id) === hold) this.holds.delete(hold.id);
  }

  /** `details` is only built when someone listens: events cost nothing on the hot path otherwise. */
  private emit(name: LockEventName, hold: Hold, details: () => object): void {
    if (!channels[name].hasSubscribers) return;
    channels[name].publish({
      key: hold.key,
      owner: hold.owner,
      protocol: this.backend.protocol.name,
      ...details(),
    });
  }
}
