import { type Lock, orDefault } from '@lock/core';
import {
  type CommonLockOptions,
  checkCommonOptions,
  checkFunction,
  checkPropertyName,
  createGate,
  type HttpFramework,
  type LockRefusal,
  refuseRequestAsOptions,
} from '@lock/express/http';
import type { Context, Middleware, Next } from 'koa';
import { declaredParams } from './route-params.js';
import { cutUnlessTakenOver, refuse, sendRefusal } from './send-refusal.js';

/** `ctx.state` under the default `stateKey`: `new Router<LockState>()` types `ctx.state.lock`. */
export interface LockState {
  /** The lock held for this request; undefined when it was skipped or ran unlocked (`failOpen`). */
  lock?: Lock;
}

/** Answers a request whose lock was refused (busy, or Redis unavailable). */
export type RefusalHandler = (ctx: Context, refusal: LockRefusal) => unknown;

/** Options of `lock()`. */
export interface KoaLockOptions extends CommonLockOptions<Context> {
  /**
   * Answers a refused request instead of the default: the refusal's status, `Retry-After` and
   * problem+json body. Default: that answer.
   */
  readonly handler?: RefusalHandler;
  /**
   * The key of `ctx.state` the lock handle is stored under. Default: `'lock'`. `__proto__`,
   * `constructor` and `prototype` are refused with `InvalidOptionError`.
   */
  readonly stateKey?: string;
}

/** Koa apps declare routes on @koa/router's router: a Koa app has no `post`. */
const KOA: HttpFramework = { routes: 'router' };

/**
 * Router middleware that holds a lock on the request's key from before the handler runs until
 * both `ctx.res` has closed (or its connection has) and `await next()` has settled: never merely
 * until `next()` returns, because a streamed body is still being written then, and never merely
 * until the response closes, because after a client abort the handler is still running. Works on Koa 2 and 3 with @koa/router.
 */
export function lock(options: KoaLockOptions): Middleware {
  refuseRequestAsOptions(options, KOA);
  const settings = checkCommonOptions<Context>(options, ['handler', 'stateKey']);
  const handler = options.handler === undefined ? sendRefusal : checkFunction(options.handler, 'handler');
  const stateKey = checkPropertyName(orDefault(options.stateKey, 'lock'), 'stateKey');
  const gate = createGate(
    settings,
    (ctx: Context) => ({
      params: (ctx as { params?: unknown }).params,
      query: ctx.query,
      headers: ctx.headers,
      body: (ctx.request as { body?: unknown }).body,
    }),
    (ctx) => declaredParams(ctx, lockMiddleware),
    KOA,
  );

  return lockMiddleware;

  async function lockMiddleware(ctx: Context, next: Next): Promise<void> {
    let downstream: Promise<unknown> | undefined;
    // Returning `downstream` keeps the lock until the handler has settled, even when the client
    // aborts first: the response closing alone must not let a second request in while it runs.
    // What the key function or `skip` throws comes out of the gate, the refusal handler's out of
    // `refuse`: each is rethrown answerable, as the locked handler's is.
    const outcome = await gate(
      ctx,
      ctx.res,
      (held) => {
        // Undefined when unlocked (skipped, failOpen): never the handle an earlier gate of another
        // key left there.
        ctx.state[stateKey] = held;
        if (held) {
          cutWhenKoaGivesUp(ctx);
          downstream = next().catch(answerable);
        } else {
          downstream = next();
        }
        return downstream;
      },
      ctx.req,
    ).catch(answerable);
    if (outcome.kind === 'refused') await refuse(ctx, handler, outcome.refusal).catch(answerable);
    await downstream;
  }
}

/**
 * Rethrows a failure of the lock's callbacks (key function, `skip`, refusal handler, locked
 * handler), a nullish one as an `Error`: Koa's `ctx.onerror(null)` answers nothing, leaving the
 * response open (and a held lock held) while the client waits. Koa turns any other non-error into
 * an `Error` the same way, and answers it 500.
 */
function answerable(error: unknown): never {
  throw error ?? new Error(`non-error thrown: ${String(error)}`);
}

/**
 * The lock lasts until the response closes, so a response that never closes holds it for as
 * long as the client waits. Koa 2 and 3 leave a response open when an error reaches them after
 * its headers went out (a handler that threw after `ctx.flushHeaders()` or `ctx.res.write`, and
 * on Koa 2 a streamed body that failed): Koa's `ctx.onerror` says "nothing we can do" and
 * returns. Cut such a response there, as Express does. One that Koa or an error handler of the
 * app answered has been ended by then and is kept.
 */
function cutWhenKoaGivesUp(ctx: Context): void {
  const onerror = ctx.onerror;
  ctx.onerror = (error) => {
    try {
      return onerror.call(ctx, error);
    } finally {
      if (error != null && ctx.headerSent) cutUnlessTakenOver(ctx);
    }
  };
}
