import http, { type Server } from 'node:http';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Lock } from '@lock/core';
import type Koa from 'koa';
import type { Middleware } from 'koa';
import { listen } from '../../express/test/support/http.js';
import type { HttpLockAdapter } from '../../express/test/support/lock-suite.js';
import { type KoaLockOptions, lock } from '../src/index.js';

/** One Koa major version, as the shared suite drives it. */
export interface KoaVersion {
  readonly name: string;
  readonly Koa: typeof Koa;
}

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

export function koaAdapter({ name, Koa }: KoaVersion): HttpLockAdapter {
  return {
    name,
    lock: (options) => lock(options as unknown as KoaLockOptions),
    serve(routes) {
      const app = new Koa();
      // Koa logs the stream error of a client that aborts mid-stream; that abort is what the test does.
      app.silent = true;
      const router = new Router();
      for (const route of routes) {
        const gates = Array.from({ length: route.gates ?? 1 }, () =>
          lock(route.options as unknown as KoaLockOptions),
        );
        router.get(route.path, ...gates, async (ctx) => {
          const body = await route.handle(ctx.state.lock as Lock | undefined);
          if (body instanceof Readable) ctx.type = 'text/plain';
          ctx.body = body;
        });
      }
      app.use(answerErrors);
      app.use(router.routes());
      return listen(http.createServer(app.callback()));
    },
  };
}

/** A server for `app`, listening. */
export function serveApp(app: Koa): Promise<Server> {
  return listen(http.createServer(app.callback()));
}
