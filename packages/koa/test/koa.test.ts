import type { Server } from 'node:http';
import Router from '@koa/router';
import type { Locker } from '@lock/core';
import Koa3 from 'koa';
import Koa2 from 'koa2';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { useLockFixture } from '../../express/test/support/fixture.js';
import { describeLockMiddleware } from '../../express/test/support/lock-suite.js';
import { lock, type RefusalHandler } from '../src/index.js';
import { answerErrors, type KoaVersion, koaAdapter, serveApp } from './koa-adapter.js';

const versions: KoaVersion[] = [
  { name: 'Koa 3', Koa: Koa3 },
  { name: 'Koa 2', Koa: Koa2 },
];

for (const version of versions) {
  describeLockMiddleware(koaAdapter(version));

  describe(`${version.name}: Koa specifics`, () => {
    let locker!: Locker;
    const track = useLockFixture((fixture) => {
      ({ locker } = fixture);
    });

    async function serve(build: (app: Koa3, router: Router) => void): Promise<Server> {
      const app = new version.Koa();
      const router = new Router();
      build(app, router);
      app.use(router.routes());
      const server = await serveApp(app);
      track(server);
      return server;
    }

    it('stores the handle under stateKey', async () => {
      const server = await serve((_app, router) =>
        router.get(
          '/orders/:id',
          lock({ locker, key: 'order:{params.id}', stateKey: 'orderLock' }),
          (ctx) => {
            ctx.body = { key: ctx.state.orderLock?.key, lock: ctx.state.lock ?? null };
          },
        ),
      );
      expect((await request(server).get('/orders/1')).body).toEqual({ key: 'order:1', lock: null });
    });

    it('keeps Retry-After through an upstream error handler, and lets a custom handler answer', async () => {
      const handler = vi.fn<RefusalHandler>((ctx, refusal) => {
        ctx.status = refusal.statusCode;
        ctx.body = { custom: refusal.reason, retryAfter: refusal.retryAfter };
      });
      const server = await serve((app, router) => {
        app.use(answerErrors);
        router.get('/orders/:id', lock({ locker, key: 'order:{params.id}', wait: 0 }), (ctx) => {
          ctx.body = { ok: true };
        });
        router.get('/custom/:id', lock({ locker, key: 'order:{params.id}', wait: 0, handler }), (ctx) => {
          ctx.body = { ok: true };
        });
      });
      const holder = await locker.acquire('order:2', { ttl: 2_500 });
      const busy = await request(server).get('/orders/2');
      const custom = await request(server).get('/custom/2');
      await holder.release();
      expect([busy.status, busy.headers['retry-after'], busy.headers['content-type']]).toEqual([
        409,
        '3',
        'application/problem+json',
      ]);
      expect([custom.status, custom.body]).toEqual([409, { custom: 'busy', retryAfter: 3 }]);
    });

    it('warns once when mounted with router.use before the routes match, and answers 500', async () => {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const server = await serve((app, router) => {
        app.use(answerErrors);
        app.use(lock({ locker, key: 'order:{params.id}', logger }));
        router.get('/orders/:id', (ctx) => {
          ctx.body = { ok: true };
        });
      });
      const responses = [await request(server).get('/orders/1'), await request(server).get('/orders/2')];
      expect(responses.map((r) => [r.status, r.body.code])).toEqual([
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
      ]);
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn.mock.calls[0]![0]).toMatchObject({ code: 'ERR_LOCK_HTTP_NO_PARAMS' });
    });

    it("reads ctx.request.body, and answers Koa's own error handling with the key error's status", async () => {
      const server = await serve((app, router) => {
        app.use(async (ctx, next) => {
          // What a body parser does; none is installed here.
          (ctx.request as { body?: unknown }).body = ctx.query.id ? { order: { id: ctx.query.id } } : {};
          await next();
        });
        router.get('/pay', lock({ locker, key: 'pay:{body.order.id}' }), (ctx) => {
          ctx.body = { key: ctx.state.lock?.key };
        });
      });
      expect((await request(server).get('/pay?id=7')).body).toEqual({ key: 'pay:7' });
      const missing = await request(server).get('/pay');
      expect([missing.status, missing.text]).toEqual([
        400,
        'the request has no value for {body.order.id}, which the lock key needs',
      ]);
    });
  });
}
