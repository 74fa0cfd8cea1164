import { LockError } from '@lock/core';

/** A `key` template the middleware cannot use; thrown when the middleware is made. */
export class KeyTemplateError extends LockError {
  override name = 'KeyTemplateError';
  constructor(
    readonly template: string,
    why: string,
  ) {
    super('ERR_LOCK_HTTP_KEY_TEMPLATE', `invalid lock key template ${JSON.stringify(template)}: ${why}`);
  }
}

/** Why a request has no usable lock key; each code comes with its own HTTP status. */
export type RequestKeyCode =
  /** A query, header or body value, or an optional route param, named by the template is absent or empty: 400. */
  | 'ERR_LOCK_HTTP_MISSING_VALUE'
  /**
   * A client-supplied value is not a single string, number, bigint or boolean (an array, an
   * object), is a number that is not finite, holds a lone UTF-16 surrogate, or makes a key the
   * locker refuses: 400.
   */
  | 'ERR_LOCK_HTTP_BAD_VALUE'
  /** The route does not declare a param named by the template: the middleware is mounted on the wrong route, 500. */
  | 'ERR_LOCK_HTTP_MISSING_PARAM'
  /** The `key` function returned something other than a non-empty string, or a key the locker refuses: 500. */
  | 'ERR_LOCK_HTTP_BAD_KEY';

const STATUS: Record<RequestKeyCode, 400 | 500> = {
  ERR_LOCK_HTTP_MISSING_VALUE: 400,
  ERR_LOCK_HTTP_BAD_VALUE: 400,
  ERR_LOCK_HTTP_MISSING_PARAM: 500,
  ERR_LOCK_HTTP_BAD_KEY: 500,
};

/**
 * The request has no usable lock key, so nothing was locked and Redis was not asked. Shaped
 * like `http-errors` (`status`, `statusCode`, `expose`), so Express's and Koa's error handling
 * answer with its status: 400 when the client left a value out, 500 when the app is misconfigured.
 */
export class RequestKeyError extends LockError {
  override name = 'RequestKeyError';
  override readonly code: RequestKeyCode;
  readonly status: 400 | 500;
  readonly statusCode: 400 | 500;
  /** Whether the message may be shown to the client (only for 400: a 500 describes the app). */
  readonly expose: boolean;
  constructor(code: RequestKeyCode, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.code = code;
    this.status = STATUS[code];
    this.statusCode = this.status;
    this.expose = this.status < 500;
  }
}

/**
 * What the middleware logs through `logger.warn` / `logger.error`: misuse found at request
 * time (logged once per middleware, as express-rate-limit's validations are), a fail-open
 * outage, a release that failed. Never thrown.
 */
export class LockHttpWarning extends LockError {
  override name = 'LockHttpWarning';
}
