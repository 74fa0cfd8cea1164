import {
  type AcquireTimeoutError,
  type InvalidKeyError,
  isUnavailable,
  type LockBusyError,
  RETRY_AFTER_UNKNOWN,
  retryAfterSeconds,
} from '@lock/core';
import { GraphQLError } from 'graphql';
import type { HttpStatusOptions } from './options.js';

/** `extensions.code` of every error the directive raises. */
export const LockedErrorCode = {
  /** The lock stayed busy for the field's `wait`; `extensions.retryAfterMs` says when the holder's lease ends. */
  LOCKED: 'LOCKED',
  /** Redis was unreachable or too slow: nobody knows whether the lock is free. */
  LOCK_UNAVAILABLE: 'LOCK_UNAVAILABLE',
  /** A template segment was null, missing or empty (or a number that is not finite), or the key built from the input was refused. */
  BAD_USER_INPUT: 'BAD_USER_INPUT',
  /** The request was aborted while the field waited for its lock. */
  ABORTED: 'ABORTED',
} as const;

export type LockedErrorCode = (typeof LockedErrorCode)[keyof typeof LockedErrorCode];

/**
 * Turns what `acquire` threw into a GraphQLError with a code. The core error is kept as
 * `cause`, not `originalError`: Yoga masks any GraphQLError whose `originalError` is a plain Error.
 * What no client can act on (an invalid option, a server refused as unsafe: the server's setup)
 * is answered as it is, for the server to report as an internal error and log.
 */
export function acquireFailure(
  error: unknown,
  coordinate: string,
  http: Required<HttpStatusOptions> | undefined,
): unknown {
  if (isUnavailable(error)) return unavailableError(coordinate, http, error);
  switch ((error as { code?: unknown } | null)?.code) {
    case 'ERR_LOCK_BUSY':
    case 'ERR_LOCK_ACQUIRE_TIMEOUT':
      return lockedError(error as LockBusyError | AcquireTimeoutError, coordinate, http);
    case 'ERR_LOCK_INVALID_KEY':
      return fieldError(
        `${coordinate}: the lock key built from the input is refused (${(error as InvalidKeyError).reason})`,
        { code: LockedErrorCode.BAD_USER_INPUT },
        error,
      );
    case 'ABORT_ERR':
      return fieldError(
        `${coordinate}: the request was aborted while waiting for its lock`,
        { code: LockedErrorCode.ABORTED },
        error,
      );
    case 'ERR_LOCK_CLOSED':
      return unavailableError(coordinate, http, error);
    default:
      return error;
  }
}

function unavailableError(
  coordinate: string,
  http: Required<HttpStatusOptions> | undefined,
  error: unknown,
): GraphQLError {
  return fieldError(
    `${coordinate} could not be locked: the lock service is unavailable`,
    {
      code: LockedErrorCode.LOCK_UNAVAILABLE,
      ...(http && { http: httpHead(http.unavailable, RETRY_AFTER_UNKNOWN) }),
    },
    error,
  );
}

/** A template segment the input left empty: nothing is locked and the resolver does not run. */
export function badInput(message: string): GraphQLError {
  return fieldError(message, { code: LockedErrorCode.BAD_USER_INPUT });
}

function lockedError(
  error: LockBusyError | AcquireTimeoutError,
  coordinate: string,
  http: Required<HttpStatusOptions> | undefined,
): GraphQLError {
  // -1: Redis could not say how long the holder has left.
  const retryAfterMs = error.remaining >= 0 ? error.remaining : undefined;
  const retry = retryAfterMs === undefined ? '' : ` (retry after ${retryAfterMs} ms)`;
  return fieldError(
    `${coordinate} is locked by another operation${retry}`,
    {
      code: LockedErrorCode.LOCKED,
      ...(retryAfterMs !== undefined && { retryAfterMs }),
      ...(http && { http: httpHead(http.locked, retryAfterSeconds(error.remaining)) }),
    },
    error,
  );
}

/**
 * Apollo Server 5 iterates `headers` as a Map (and checks `instanceof Map`); Yoga 5
 * `Object.assign`s it into a plain object, which copies own properties only: one Map that also
 * carries the header as an own property works on both.
 */
function httpHead(status: number, retryAfter: number): { status: number; headers: Map<string, string> } {
  const seconds = String(retryAfter);
  const headers = new Map([['retry-after', seconds]]);
  Object.assign(headers, { 'retry-after': seconds });
  return { status, headers };
}

function fieldError(message: string, extensions: Record<string, unknown>, cause?: unknown): GraphQLError {
  const error = new GraphQLError(message, { extensions });
  if (cause !== undefined) error.cause = cause;
  return error;
}
