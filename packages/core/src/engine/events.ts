import { channel, tracingChannel } from 'node:diagnostics_channel';
import type { LockLostError, LockLostReason } from '../errors.js';

/**
 * Events published on `node:diagnostics_channel`, so tracing and metrics cost nothing until
 * someone subscribes. Every message names the key, the owner and the protocol; the owner
 * releases and extends the lock, so treat it as a secret.
 */
export const channels = {
  /** `AcquireEvent` after a lock is acquired. */
  acquire: channel('lock:acquire'),
  /** `ReleaseEvent` after a hold is given up, or a release failed. */
  release: channel('lock:release'),
  /** `ExtendEvent` after a lease was reset, by `extend()` or the watchdog. */
  extend: channel('lock:extend'),
  /** `LostEvent` when a held lock is lost. */
  lost: channel('lock:lost'),
  /** `RenewEvent` once per renewal batch the watchdog sends. */
  renew: channel('lock:renew'),
};

export type LockEventName = keyof typeof channels;

/** What every per-lock event names. */
export interface LockEvent {
  readonly key: string;
  /**
   * The hold the event concerns, unique in the process: every handle of a re-entered hold shares
   * it, and two lockers holding one key and owner (other prefixes, other servers) have two.
   */
  readonly hold: number;
  /** A secret: it releases and extends the lock. Never record it. */
  readonly owner: string;
  readonly protocol: string;
}

/** `lock:acquire`: published inside the acquire call that got the lock. */
export interface AcquireEvent extends LockEvent {
  readonly fence: number;
  /** The owner's hold count after this acquisition: more than 1 on re-entry. */
  readonly holds: number;
  /** Ms the call waited. */
  readonly waited: number;
  readonly attempts: number;
  /** Whether a release message naming or waking this call preceded the winning attempt. */
  readonly handoff: boolean;
}

/** `lock:release`: one handle given up, or (`result: 'error'`) a release that failed. */
export interface ReleaseEvent extends LockEvent {
  /** Ms since the hold was acquired. */
  readonly held: number;
  readonly result: 'released' | 'held' | 'not-owner' | 'error';
  /**
   * This release gave up the last handle this locker had of the hold: the hold is over here.
   * With `result: 'held'` too, when Redis still counts holds of the owner that are not this
   * hold's (an explicit owner shared by another locker or process).
   */
  readonly ended: boolean;
  /** With `result: 'error'`: why (the hold may be released again). */
  readonly error?: unknown;
}

/** `lock:extend`: a lease reset by `lock.extend()` (`renewal: false`) or the watchdog. */
export interface ExtendEvent extends LockEvent {
  readonly validUntil: number;
  readonly renewal: boolean;
}

/** `lock:lost`: a hold stopped being held before its release. */
export interface LostEvent extends LockEvent {
  readonly reason: LockLostReason;
  readonly error: LockLostError;
}

/** `lock:renew`: one batch of renewals the watchdog sent (not per lock). */
export interface RenewEvent {
  readonly protocol: string;
  /** Locks in the batch. */
  readonly size: number;
  /** Lease applied, in ms. */
  readonly ttl: number;
  /** Whether the round failed (it is retried within each lock's validity). */
  readonly failed: boolean;
}

/**
 * The whole of one `acquire` / `tryAcquire` call as a `TracingChannel` (`tracing:lock:acquire:*`),
 * published only while someone subscribes. The context is `{ key, protocol, ttl, wait }`; on
 * `asyncEnd` it carries `attempts`, `waited` and `result` (the `Lock`, or null from `tryAcquire`
 * when busy) or `error`.
 * A subscriber can `bindStore` on `start` to make its own context (a tracing span) active for
 * everything the call does, Redis commands included.
 */
export const acquireTracing = tracingChannel<object, AcquireTraceContext>('lock:acquire');

/**
 * Whether anyone subscribes to `acquireTracing`. Read from its channels: `TracingChannel`'s own
 * `hasSubscribers` came in Node 20.13, and before it reads as nobody.
 */
export function acquireTraced(): boolean {
  const { start, end, asyncStart, asyncEnd, error } = acquireTracing;
  return (
    start.hasSubscribers ||
    end.hasSubscribers ||
    asyncStart.hasSubscribers ||
    asyncEnd.hasSubscribers ||
    error.hasSubscribers
  );
}

/** The context object of `acquireTracing`. */
export interface AcquireTraceContext {
  readonly key: string;
  readonly protocol: string;
  readonly ttl: number;
  readonly wait: number;
  /** Set when the call ends, whatever its outcome: attempts sent and ms waited. */
  attempts?: number;
  waited?: number;
}
