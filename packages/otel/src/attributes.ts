/**
 * Attribute names on the spans and metrics of this package. OpenTelemetry has no semantic
 * convention for distributed locks (as of semantic-conventions 1.45), so these follow the naming
 * rules of the conventions under a `lock.` namespace. They are part of the public API: renaming
 * one is a breaking change.
 */

/** The lock key as `keyPattern` renders it (ids redacted by default). */
export const ATTR_LOCK_KEY = 'lock.key';
/** The wire protocol: `token`, `legacy`, a Redisson lock kind, … */
export const ATTR_LOCK_PROTOCOL = 'lock.protocol';
/** How an acquire call ended: see `AcquireOutcome`. */
export const ATTR_LOCK_OUTCOME = 'lock.outcome';
/** Milliseconds the acquire call took, waiting included. */
export const ATTR_LOCK_WAIT_MS = 'lock.wait_ms';
/** The longest wait the call allowed, in ms (`wait`; 0 for `tryAcquire`). */
export const ATTR_LOCK_WAIT_LIMIT_MS = 'lock.wait_limit_ms';
/** The lease requested, in ms. */
export const ATTR_LOCK_TTL_MS = 'lock.ttl_ms';
/** Acquisition attempts the call sent to Redis, whatever its outcome. */
export const ATTR_LOCK_ATTEMPTS = 'lock.attempts';
/** The fencing token of the acquisition. */
export const ATTR_LOCK_FENCE = 'lock.fence';
/** Whether the owner already held the lock (a re-entrant acquisition). */
export const ATTR_LOCK_REENTRY = 'lock.reentry';
/** Whether a release message woke the call for its winning attempt (a hand-off from the holder). */
export const ATTR_LOCK_HANDOFF = 'lock.handoff';
/** How a hold ended: `released`, `not-owner` (the release found the lock gone, no loss proved) or `lost`. */
export const ATTR_LOCK_HOLD_OUTCOME = 'lock.hold.outcome';
/** Why a held lock was lost: `expired`, `renewal-failed`, `taken`, `failover` or `closed`. */
export const ATTR_LOCK_LOST_REASON = 'lock.lost.reason';
/** Renewals by the watchdog during a hold. */
export const ATTR_LOCK_RENEWAL_COUNT = 'lock.renewal.count';
/** Explicit `lock.extend()` calls during a hold. */
export const ATTR_LOCK_EXTENSION_COUNT = 'lock.extension.count';
/**
 * The general OpenTelemetry attribute for a failure's kind: here the error's stable `code`. Set
 * exactly when a span's status is ERROR (never for `busy` or `aborted`, which are answers), and
 * on the renewal batches that failed.
 */
export const ATTR_ERROR_TYPE = 'error.type';
