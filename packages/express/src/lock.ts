import type { Lock } from '@lock/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  type CommonLockOptions,
  checkCommonOptions,
  checkFunction,
  checkPropertyName,
  createGate,
  type LockRefusal,
} from './http/index.js';
import { sendRefusal } from './send-refusal.js';

declare global {
  namespace Express {
    interface Request {
      /** The lock held for this request by `@lock/express` (under the default `requestPropertyName`). */
      lock?: Lock;
    }
  }
}

/** Answers a request whose lock was refused (busy, or Redis unavailable). */
export type RefusalHandler = (
  req: Request,
  res: Response,
  next: NextFunction,
  refusal: LockRefusal,
) => unknown;

/** Options of `lock()`. */
export interface ExpressLockOptions extends CommonLockOptions<Request> {
  /**
   * Answers a refused request instead of the default: the refusal's status, `Retry-After` and
   * problem+json body. It may call `next()` to run the route anyway. Default: that answer.
   */
  readonly handler?: RefusalHandler;
  /** The property of `req` the lock handle is stored on. Default: `'lock'`. */
  readonly requestPropertyName?: string;
}

/**
 * Route middleware that holds a lock on the request's key from before the handler runs until
 * the response closes, so requests for the same resource run one at a time and requests for
 * different resources in parallel. Works on Express 4 and 5: its own failures go to `next(err)`
 * under both.
 */
export function lock(options: ExpressLockOptions): RequestHandler {
  const settings = checkCommonOptions<Request>(options, ['handler', 'requestPropertyName']);
  const handler = options.handler === undefined ? sendRefusal : checkFunction(options.handler, 'handler');
  const property = checkPropertyName(options.requestPropertyName ?? 'lock', 'requestPropertyName');
  const gate = createGate(settings, (req: Request) => ({
    params: req.params,
    query: req.query,
    headers: req.headers,
    body: req.body,
  }));

  return function lockMiddleware(req, res, next) {
    const proceed = (held: Lock | undefined) => {
      if (held) (req as unknown as Record<string, unknown>)[property] = held;
      next();
    };
    gate(req, res, proceed).then((outcome) => {
      if (outcome.kind !== 'refused') return;
      new Promise((resolve) => resolve(handler(req, res, next, outcome.refusal))).catch(next);
    }, next);
  };
}
