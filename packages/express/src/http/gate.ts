import { isUnavailable, type Lock, type LockLostError, type LockLostReason } from '@lock/core';
import { LockHttpWarning } from './errors.js';
import { APP_ROUTES, type HttpFramework } from './framework.js';
import type { KeySources } from './key-template.js';
import type { LockSettings } from './options.js';
import { busyRefusal, codeOf, isBusy, type LockRefusal, unavailableRefusal } from './refusal.js';
import { keyOf, refusedKeyError } from './request-key.js';
import { type ClosableRequest, type ClosableResponse, lockForResponse } from './response-lock.js';
import { tell, WarnOnce } from './warnings.js';

/** What became of a request. */
export type GateOutcome =
  /**
   * `proceed` was called: with the lock (released once the response lifetime is over and the
   * promise `proceed` returned has settled), or without one (skipped, or failing open).
   */
  | { readonly kind: 'proceeded' }
  /** Answer with the refusal instead of running the handler. */
  | { readonly kind: 'refused'; readonly refusal: LockRefusal }
  /** The response lifetime ended while the request waited (the client went away): do nothing more. */
  | { readonly kind: 'gone' };

/**
 * Runs the rest of the request: the adapter stores the handle and calls the next middleware. It
 * may return a promise of the rest of the request (Koa's `next()`): the lock is then held until
 * it has settled as well, even when the response closed before (a client abort mid-handler).
 */
export type Proceed = (lock: Lock | undefined) => unknown;

/**
 * Decides one request; rejects with `RequestKeyError` (no usable key) or whatever else went
 * wrong. `req` is the Node request (Express `req`, Koa `ctx.req`): the close of its connection
 * ends the response lifetime too, which a pipelined response queued behind another never
 * reports itself. Give it; without it such a response keeps its lock while the lease is renewed.
 */
export type Gate<C> = (
  context: C,
  res: ClosableResponse,
  proceed: Proceed,
  req?: ClosableRequest,
) => Promise<GateOutcome>;

const PROCEEDED: GateOutcome = { kind: 'proceeded' };
const GONE: GateOutcome = { kind: 'gone' };
const FAIL_OPEN = 'ERR_LOCK_HTTP_FAIL_OPEN';

/**
 * The framework-neutral core of both middlewares: skip, key, lock for the response, map the
 * errors. `sourcesOf` runs on every request: hand over what the framework has, copy nothing.
 * `declaredParamsOf` gives the params the route running the middleware declares, for a framework
 * that leaves an optional param the request left out off `params`; it is asked only when a params
 * placeholder finds no own property of `params` (or `params` has none), to answer 400 rather than
 * 500. Default: none beyond the own properties of `params`. `framework` is what the warnings'
 * examples declare a route on. Default: `app`.
 */
export function createGate<C>(
  settings: LockSettings<C>,
  sourcesOf: (context: C) => KeySources,
  declaredParamsOf: (context: C) => readonly string[] = () => [],
  framework: HttpFramework = APP_ROUTES,
): Gate<C> {
  const warnings = new WarnOnce(settings.logger);
  const resolveKey = keyOf(settings, sourcesOf, declaredParamsOf, warnings, framework);
  const ended = (error: unknown, key: string) =>
    tell(
      settings.logger,
      'error',
      new LockHttpWarning('ERR_LOCK_HTTP_RELEASE', afterGrantMessage(error, key), { cause: error }),
    );

  return async (context, res, proceed, req) => {
    if (settings.skip && (await settings.skip(context))) {
      proceed(undefined);
      return PROCEEDED;
    }
    const key = await resolveKey(context);
    try {
      const proceeded = await lockForResponse(
        res,
        req,
        settings.locker,
        key,
        settings.acquire,
        proceed,
        ended,
      );
      if (proceeded) warnings.reset(FAIL_OPEN);
      return proceeded ? PROCEEDED : GONE;
    } catch (error) {
      if (isBusy(error)) {
        warnings.reset(FAIL_OPEN);
        return { kind: 'refused', refusal: busyRefusal(error, settings.statusCode, settings.message) };
      }
      if (isUnavailable(error)) {
        if (!settings.failOpen) return { kind: 'refused', refusal: unavailableRefusal(error) };
        warnings.warn(FAIL_OPEN, 'Redis is unavailable: requests run without their lock (failOpen)', {
          cause: error,
        });
        proceed(undefined);
        return PROCEEDED;
      }
      if (codeOf(error) === 'ERR_LOCK_INVALID_KEY') {
        throw refusedKeyError(settings.key, error);
      }
      throw error;
    }
  };
}

/** Why a lock was lost, as the `ERR_LOCK_HTTP_RELEASE` log tells it. */
const LOSSES: Record<LockLostReason, string> = {
  expired: 'its lease ran out unrenewed (a fixed ttl shorter than the request, or a stalled process)',
  'renewal-failed': 'its lease could not be renewed and ran out',
  taken: 'the key was deleted, or taken by another owner, while it was held',
  closed: 'the locker was closed',
  failover: 'its Redis master changed (a failover, a restart, a demotion) before a replica had it',
};

/**
 * What the `ERR_LOCK_HTTP_RELEASE` log says happened to the lock of a response: lost (a release
 * that found the key no longer ours reports a loss too, `'taken'`), or a release that failed,
 * which alone leaves the key locked until its lease ends.
 */
function afterGrantMessage(error: unknown, key: string): string {
  if (codeOf(error) !== 'ERR_LOCK_LOST') {
    return `releasing the lock "${key}" of a response failed; the key stays locked until its lease ends`;
  }
  const { reason } = error as LockLostError;
  return `the lock "${key}" of a response was lost before the response was over: ${LOSSES[reason] ?? reason}; other requests for the key were not kept out from then on`;
}
