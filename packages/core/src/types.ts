import type { Inspection, ReleaseReply } from './protocol.js';

/** Backoff between acquisition attempts while waiting (release messages usually wake a waiter first). */
export interface RetryOptions {
  /**
   * Delays in ms start at half of this after the first refusal and double up to `max`; a waiter
   * Redis queued sleeps `max` between attempts (a release hands it the lock or names it). A
   * positive integer below 2^31, at most `max`. Default: `50`.
   */
  readonly base?: number;
  /** Largest delay in ms (a positive integer below 2^31); also the bound on how long a missed release message can delay a waiter. Default: `1_000`. */
  readonly max?: number;
  /** Fraction of each delay drawn at random, 0 to 1, so waiters do not retry in lockstep. Default: `0.5`. */
  readonly jitter?: number;
  /**
   * How many attempts a call sends before it gives up, a positive integer or `Infinity`: the
   * last one refused, it rejects as a `wait` that ran out does (`AcquireTimeoutError`, whose
   * `limit` is then `'attempts'`; `LockUnavailableError` when Redis did not answer it). A grant
   * a release hands to a waiter costs no attempt. `wait: 0` sends one whatever this says.
   * Default: `Infinity` (bounded by `wait` alone).
   */
  readonly attempts?: number;
}

/** Gate each acquisition on replicas having received it (`WAIT` on the same connection). */
export type ReplicationOptions =
  | 'auto'
  | false
  | {
      /** How many replicas must confirm. */
      readonly replicas: number;
      /** How long `WAIT` may block, in ms. */
      readonly timeout: number;
    };

/** Options of one acquisition; each falls back to the locker's default. */
export interface AcquireOptions {
  /**
   * Lease in ms (an integer from 10 below 2^31). Giving one means a fixed lease: the watchdog
   * does not renew it unless `renew: true`. Default: the locker's `ttl` (30 000), renewed.
   */
  readonly ttl?: number;
  /** How long to wait for a busy lock, in ms; `0` tries once, `Infinity` waits until aborted. Default: the locker's `wait` (10 000). */
  readonly wait?: number;
  /** Renew the lock every ttl/3 until released. Default: the locker's `renew` (`true`) when no `ttl` was given, else `false`. */
  readonly renew?: boolean;
  /** Stops a waiting acquire; the call then rejects with `LockAbortError` and leaves nothing in Redis. */
  readonly signal?: AbortSignal;
  /**
   * Owner identity, for handing a lock between processes (acquisitions with the same owner
   * count as re-entries, in any process). Default: a new owner for this acquisition, or the
   * enclosing hold's owner when re-entering.
   */
  readonly owner?: string;
  /** Backoff while waiting. Default: the locker's `retry`. */
  readonly retry?: RetryOptions;
  /**
   * Whether this acquisition re-enters a hold of the same key whose `using` critical section
   * encloses the caller. With `false` it is a new owner and waits for that hold. Default: the
   * locker's `reentrant` (`true`).
   */
  readonly reentrant?: boolean;
}

/** Options of `using`: those of `acquire`, plus what to do when the lock is lost meanwhile. */
export interface UsingOptions extends AcquireOptions {
  /**
   * Whether `using` rejects with `LockLostError` when the lock was lost (or its validity ended)
   * before the routine settled, even though the routine completed: the critical section ran
   * partly unprotected. The error's `outcome` carries the routine's result or error. With
   * `false`, the routine's own outcome is returned. Default: `true`.
   */
  readonly rejectOnLoss?: boolean;
}

/** A held lock. Release it (or let `using` / `await using` do so); it is idempotent. */
export interface Lock extends AsyncDisposable {
  /** The key as the caller named it (without prefix). */
  readonly key: string;
  /** The owner identity that holds it. */
  readonly owner: string;
  /** Fencing token: strictly greater than that of every earlier holder of this key. */
  readonly fence: number;
  /**
   * Monotonic time (the locker's `clock`, `performance.now()` by default: not a timestamp)
   * until which the lock is certainly held; moves on renewal. See `remaining()`.
   */
  readonly validUntil: number;
  /**
   * How many ms the lock is still certainly held: `validUntil` less now; 0 once lost, expired or
   * released, and once `release()` was called even if it failed (unanswered, it may have landed).
   */
  remaining(): number;
  /** Aborted, with a `LockLostError` reason, when the lock is lost or its validity ends unrenewed. */
  readonly signal: AbortSignal;
  /** Hold count of this owner after this acquisition (more than 1 on re-entry). */
  readonly holds: number;
  /** Whether `release()` was called, even if it failed (unanswered, it may have landed), or the lock was lost. */
  readonly released: boolean;
  /** Throws the `LockLostError` if the lock is no longer certainly held. */
  assertHeld(): void;
  /** Resets the lease to `ttl` ms (default: the acquisition's ttl); throws `LockLostError` if no longer ours. */
  extend(ttl?: number): Promise<void>;
  /**
   * Gives up this hold; the last hold frees the lock. Answers `'released'` (freed), `'held'`
   * (this owner still holds it through other holds) or `'not-owner'` (it was lost before; a lost
   * hold of a fresh owner is also released in the background, freeing a key Redis still has); once
   * it succeeded, later calls answer the same without sending anything. Rejects with
   * `LockUnavailableError` when Redis did not answer: the lock is no longer renewed and ends by
   * its lease at the latest, and calling `release()` again sends it again (each retry carries the
   * same id, so a release that landed takes off no second hold).
   */
  release(): Promise<ReleaseReply>;
}

/** What `inspect()` reports. */
export interface LockInspection extends Inspection {
  /** The protocol the locker speaks. */
  readonly protocol: string;
}

/** Acquires locks of one protocol on one backend. */
export interface Locker {
  /**
   * Waits (up to `wait`) for the lock; rejects with `AcquireTimeoutError`, `LockBusyError`
   * (wait 0), `LockAbortError`, or `LockUnavailableError` when Redis could not be reached (by
   * `wait` plus one `commandTimeout`).
   */
  acquire(key: string, options?: AcquireOptions): Promise<Lock>;
  /** One attempt, no waiting: the lock, or null when it is busy; `LockUnavailableError` after `commandTimeout` when Redis does not answer. */
  tryAcquire(key: string, options?: Omit<AcquireOptions, 'wait'>): Promise<Lock | null>;
  /**
   * Runs `fn` while holding the lock and always releases it. Acquisitions of the same key made
   * inside `fn` (and in anything it awaits or starts) re-enter the lock; `fn`'s own error is
   * never replaced by a release error. Rejects with `LockLostError` when the lock was lost
   * before `fn` settled (see `rejectOnLoss`).
   */
  using<T>(key: string, options: UsingOptions | undefined, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  using<T>(key: string, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  /**
   * Throws what `acquire` would throw for `options` (an unknown name, a ttl this locker's format
   * refuses, a bad wait, retry or owner) without sending anything: for adapters that take
   * acquisition options when they are configured, so a bad one fails then, not on every call.
   */
  checkOptions(options: AcquireOptions): void;
  /** Reads the lock without changing anything. */
  inspect(key: string): Promise<LockInspection>;
  /** Whether anyone holds the lock. */
  isLocked(key: string): Promise<boolean>;
  /**
   * Gives up every lock it holds (their signals abort with `LockLostError`, reason `'closed'`,
   * before Redis frees the keys), stops renewal, rejects pending acquires with
   * `LockerClosedError`, and closes the locker's own connections (never the caller's client).
   */
  close(): Promise<void>;
}
