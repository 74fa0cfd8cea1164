import { isUnavailable } from '@lock/core';

/** How an acquire call ended, as `lock.outcome` records it. */
export type AcquireOutcome = 'acquired' | 'busy' | 'timeout' | 'aborted' | 'unavailable' | 'error';

/** Outcomes of core's failures, by their stable `code` (which survives two copies of core). */
const FAILURES: Readonly<Record<string, AcquireOutcome>> = {
  ERR_LOCK_BUSY: 'busy',
  ERR_LOCK_ACQUIRE_TIMEOUT: 'timeout',
  ABORT_ERR: 'aborted',
};

export function failureOutcome(error: unknown): AcquireOutcome {
  if (isUnavailable(error)) return 'unavailable';
  return FAILURES[errorType(error)] ?? 'error';
}

/** The `error.type` the semantic conventions give a failure of no known kind. */
export const OTHER_ERROR = '_OTHER';

/**
 * `error.type`: the error's `code` when it has one, else its name. Never its message: core's
 * messages name the raw key, which `keyPattern` may be redacting.
 */
export function errorType(error: unknown): string {
  if (typeof error !== 'object' || error === null) return OTHER_ERROR;
  const { code, name } = error as { code?: unknown; name?: unknown };
  if (typeof code === 'string' && code.length > 0) return code;
  return typeof name === 'string' && name.length > 0 ? name : OTHER_ERROR;
}
