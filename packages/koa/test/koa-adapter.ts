import http, { type Server } from 'node:http';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Lock } from '@lock/core';
import Koa3, { type Middleware } from 'koa';
import Koa2 from 'koa2';
import type { H2LockAdapter, H2Route } from '../../express/test/support/h2-suite.js';
import { listen } from '../../express/test/support/http.js';
import type { HttpLockAdapter, TestRoute } from '../../express/test/support/lock-suite.js';
import { type KoaLockOptions, lock } from '../src/index.js';

/** One Koa major version, as the shared suites drive it. */
export interface KoaVersion {
  readonly name: string;
  readonly Koa: typeof Koa3;
}

export const koaVersions: readonly KoaVersion[] = [
  { name: 'Koa 3', Koa: Koa3 },
  { name: 'Koa 2', Koa: Koa2 },
];

/** Answers an error with its status and `{ code }`, as the suite expects, the way Koa apps usually do. */
export const answerErrors: Middleware = async (ctx, next) => {
  try {
    await next();
  } catch (error) {
    const { status, code } = error as { status?: number; code?: string };
    ctx.status = status ?? 500;
    ctx.body = { code: code ?? null };
  }
};

/** A Koa app serving `routes` behind `lock()`, as both suites expect. */
function appFor(Koa: typeof Koa3, routes: readonly H2Route[]): Koa3 {
  const app = new Koa();
  // Koa logs the stream error of a client that aborts mid-stream; that abort is what the test does.
  app.silent = true;
  const router = new Router();
  for (const route of routes) {
    const gates = Array.from({ length: route.gates ?? 1 }, (_, i): Middleware[] => [
      ...(i > 0 && route.betweenGates ? [betweenGates(route.betweenGates)] : []),
      lock(route.options as unknown as KoaLockOptions),
    ]).flat();
    const before: Middleware[] = route.flushHeaders ? [flushHeaders] : [];
    router.get(route.path, ...before, ...gates, async (ctx) => {
      const body = await route.handle(ctx.state.lock as Lock | undefined);
      if (body instanceof Readable) ctx.type = 'text/plain';
      ctx.body = body;
    });
  }
  app.use(answerErrors);
  app.use(router.routes());
  return app;
}

/** A middleware running `work` with the handle an earlier gate stored, between two gates. */
function betweenGates(work: NonNullable<TestRoute['betweenGates']>): Middleware {
  return async (ctx, next) => {
    await work(ctx.state.lock as Lock | undefined);
    await next();
  };
}

/** Sends a 200's headers, as a middleware that starts a response early does. */
const flushHeaders: Middleware = async (ctx, next) => {
  ctx.status = 200;
  ctx.flushHeaders();
  await next();
};

export function koaAdapter({ name, Koa }: KoaVersion): HttpLockAdapter & H2LockAdapter {
  return {
    name,
    // @koa/router reads paths with path-to-regexp 8 under Koa 2 and 3.
    optionalIdPath: '/orders{/:id}',
    lock: (options) => lock(options as unknown as KoaLockOptions),
    serve: (routes) => serveApp(appFor(Koa, routes)),
    listener: (routes) => appFor(Koa, routes).callback(),
  };
}

/** A server for `app`, listening. */
export function serveApp(app: Koa3): Promise<Server> {
  return listen(http.createServer(app.callback()));
}
