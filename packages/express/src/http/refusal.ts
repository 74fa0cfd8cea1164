import {
  type AcquireTimeoutError,
  type LockBusyError,
  type LockError,
  type LockUnavailableError,
  RETRY_AFTER_UNKNOWN,
  type ReplicationError,
  retryAfterSeconds,
} from '@lock/core';

/** An RFC 9457 problem details body (`application/problem+json`). It never names the key or the holder. */
export interface LockProblem {
  /** Stable URI of the kind of problem: `urn:lock:problem:busy` or `urn:lock:problem:unavailable`. */
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /** Stable machine-readable code: `ERR_LOCK_BUSY` or `ERR_LOCK_UNAVAILABLE`. */
  readonly code: 'ERR_LOCK_BUSY' | 'ERR_LOCK_UNAVAILABLE';
}

/** Why the request did not get its lock, and the answer the middleware gives for it. */
export interface LockRefusal {
  /** `'busy'`: another request holds the lock; `'unavailable'`: Redis could not be reached in time. */
  readonly reason: 'busy' | 'unavailable';
  /** The status to answer: the `statusCode` option when busy, 503 when unavailable. */
  readonly statusCode: number;
  /** Seconds for the `Retry-After` header. */
  readonly retryAfter: number;
  /** The default response body. */
  readonly problem: LockProblem;
  /** What the locker threw: `LockBusyError`, `AcquireTimeoutError`, `LockUnavailableError` or `ReplicationError`. */
  readonly error: LockError;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The default `detail` of a busy answer. */
export const DEFAULT_BUSY_MESSAGE =
  'Another request is working on this resource. Retry after the time given in Retry-After.';

/** The refusal for a busy lock (`wait: 0`, or the wait ran out). */
export function busyRefusal(
  error: LockBusyError | AcquireTimeoutError,
  statusCode: number,
  message: string,
): LockRefusal {
  return {
    reason: 'busy',
    statusCode,
    retryAfter: retryAfterSeconds(error.remaining),
    problem: {
      type: 'urn:lock:problem:busy',
      title: 'Resource busy',
      status: statusCode,
      detail: message,
      code: 'ERR_LOCK_BUSY',
    },
    error,
  };
}

/** The refusal when Redis did not answer in time, or no replica confirmed the lock (fail closed). */
export function unavailableRefusal(error: LockUnavailableError | ReplicationError): LockRefusal {
  return {
    reason: 'unavailable',
    statusCode: 503,
    retryAfter: RETRY_AFTER_UNKNOWN,
    problem: {
      type: 'urn:lock:problem:unavailable',
      title: 'Lock service unavailable',
      status: 503,
      detail:
        'The lock guarding this resource could not be checked. Retry after the time given in Retry-After.',
      code: 'ERR_LOCK_UNAVAILABLE',
    },
    error,
  };
}

const BUSY = new Set(['ERR_LOCK_BUSY', 'ERR_LOCK_ACQUIRE_TIMEOUT']);

/** The `code` of an error: errors are told by code as well as by class, as two copies of @lock/core may be installed side by side. */
export function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

/** `LockBusyError` or `AcquireTimeoutError`. */
export function isBusy(error: unknown): error is LockBusyError | AcquireTimeoutError {
  return BUSY.has(codeOf(error) as string);
}
