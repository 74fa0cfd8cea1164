import { IncomingMessage } from 'node:http';
import { type Lock, orDefault } from '@lock/core';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  APP_ROUTES,
  type CommonLockOptions,
  checkCommonOptions,
  checkFunction,
  checkPropertyName,
  createGate,
  type LockRefusal,
  refuseRequestAsOptions,
} from './http/index.js';
import { declaredParams } from './route-params.js';
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

/**
 * Properties a request has before any middleware of the app ran, besides those of
 * `IncomingMessage.prototype`: the instance fields Node sets, what Express's request prototype
 * (4 and 5) and router add, and `body` (body parsers). Storing the handle over one breaks the app.
 */
const REQUEST_PROPERTIES: ReadonlySet<string> = new Set([
  // node:http IncomingMessage and Readable instance fields
  'socket',
  'httpVersion',
  'httpVersionMajor',
  'httpVersionMinor',
  'complete',
  'rawHeaders',
  'rawTrailers',
  'joinDuplicateHeaders',
  'aborted',
  'upgrade',
  'url',
  'method',
  'statusCode',
  'statusMessage',
  'client',
  '_consuming',
  '_dumped',
  '_readableState',
  '_events',
  '_eventsCount',
  '_maxListeners',
  // Express request prototype
  'get',
  'header',
  'accepts',
  'acceptsEncodings',
  'acceptsEncoding',
  'acceptsCharsets',
  'acceptsCharset',
  'acceptsLanguages',
  'acceptsLanguage',
  'range',
  'param',
  'is',
  'protocol',
  'secure',
  'ip',
  'ips',
  'subdomains',
  'path',
  'hostname',
  'host',
  'fresh',
  'stale',
  'xhr',
  'query',
  // set by Express, its router and body parsers
  'params',
  'body',
  'route',
  'baseUrl',
  'originalUrl',
  'res',
  'next',
  'app',
  '_parsedUrl',
  '_parsedOriginalUrl',
]);

const onRequest = (property: string): boolean =>
  REQUEST_PROPERTIES.has(property) || property in IncomingMessage.prototype;

/** Options of `lock()`. */
export interface ExpressLockOptions extends CommonLockOptions<Request> {
  /**
   * Answers a refused request instead of the default: the refusal's status, `Retry-After` and
   * problem+json body. It may call `next()` to run the route anyway. Default: that answer.
   */
  readonly handler?: RefusalHandler;
  /**
   * The property of `req` the lock handle is stored on. Default: `'lock'`. Names a request
   * already has (`params`, `body`, `query`, `socket`, `headers`, …) and `__proto__`,
   * `constructor`, `prototype` are refused with `InvalidOptionError`.
   */
  readonly requestPropertyName?: string;
}

/** Runs the rest of a request once its gate let it through: returns a promise of its end, if it knows one. */
type Onward = (req: Request, res: Response, next: NextFunction) => unknown;

/**
 * Route middleware that holds a lock on the request's key from before the handler runs until
 * the response closes (or its connection does), so requests for the same resource run one at a time and requests for
 * different resources in parallel. Works on Express 4 and 5: its own failures go to `next(err)`
 * under both. Express tells a middleware nothing of the handler's end, so a client that goes away
 * frees the lock while the handler may still run: use `locked()` for a handler that writes.
 */
export function lock(options: ExpressLockOptions): RequestHandler {
  refuseRequestAsOptions(options, APP_ROUTES);
  return gated(options, 'the lock() options', (_req, _res, next) => next());
}

/**
 * A route handler that runs under the lock, as `lock(options)` followed by `route` does, but
 * holds the lock until `route` has also settled (its promise, for an async handler): a client
 * that goes away mid-handler does not free the lock while the handler still works. What `route`
 * throws or rejects with goes to `next(err)` on Express 4 and 5.
 */
export function locked(options: ExpressLockOptions, route: RequestHandler): RequestHandler {
  refuseRequestAsOptions(options, APP_ROUTES, 'locked');
  const handler = checkFunction(route, 'route');
  return gated(options, 'the locked() options', (req, res, next) => {
    const settled = new Promise((resolve) => resolve(handler(req, res, next)));
    settled.catch(failWith(next, 'the locked() route'));
    return settled;
  });
}

/**
 * Passes a failure to `next(err)`. Express reads a falsy argument as `next()` and runs the next
 * handler, here the route without its lock (or, after a failed `locked()` route, the next route):
 * a failure without a reason goes as an `Error` naming `what` failed, as Express 5 does for a
 * rejected handler.
 */
function failWith(next: NextFunction, what: string): (error: unknown) => void {
  return (error) => next(error || new Error(`${what} failed with ${String(error)}`));
}

function gated(options: ExpressLockOptions, where: string, onward: Onward): RequestHandler {
  const settings = checkCommonOptions<Request>(options, ['handler', 'requestPropertyName'], where);
  const handler = options.handler === undefined ? sendRefusal : checkFunction(options.handler, 'handler');
  const property = checkPropertyName(
    orDefault(options.requestPropertyName, 'lock'),
    'requestPropertyName',
    onRequest,
  );
  const gate = createGate(
    settings,
    (req: Request) => ({ params: req.params, query: req.query, headers: req.headers, body: req.body }),
    (req) => declaredParams(req, lockMiddleware),
    APP_ROUTES,
  );

  return lockMiddleware;

  function lockMiddleware(req: Request, res: Response, next: NextFunction): void {
    const proceed = (held: Lock | undefined): unknown => {
      // Undefined when unlocked (skipped, failOpen, a refusal handler's next()): never the
      // handle an earlier gate of another key left there.
      (req as unknown as Record<string, unknown>)[property] = held;
      return onward(req, res, next);
    };
    // A refusal handler's `next()` runs the route anyway (unlocked); `next(err)` is Express's.
    // Express reads any falsy argument as `next()` (a Node callback's `null` error handed on).
    const anyway: NextFunction = (error?: unknown) => {
      if (!error) proceed(undefined);
      else next(error);
    };
    gate(req, res, proceed, req).then(
      (outcome) => {
        if (outcome.kind !== 'refused') return;
        new Promise((resolve) => resolve(handler(req, res, anyway, outcome.refusal))).catch(
          failWith(next, 'the refusal handler'),
        );
      },
      failWith(next, 'the lock middleware (key function, skip or locker)'),
    );
  }
}
