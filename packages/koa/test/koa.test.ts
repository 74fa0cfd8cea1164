import type { Server } from 'node:http';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Lock, Locker } from '@lock/core';
import type { RedisServer } from '@lock/testing';
import { waitFor } from '@lock/testing';
import type Koa3 from 'koa';
import type { Middleware } from 'koa';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { useLockFixture } from '../../express/test/support/fixture.js';
import { acceptedConnections, openRequest, pipeline } from '../../express/test/support/http.js';
import { describeLockMiddleware } from '../../express/test/support/lock-suite.js';
import { expectRetryAfterFromLease } from '../../express/test/support/recorder.js';
import { expectUncalledLockRefusal } from '../../express/test/support/uncalled.js';
import { lock, type RefusalHandler } from '../src/index.js';
import { answerErrors, koaAdapter, koaVersions, serveApp } from './koa-adapter.js';

/** A promise the test settles by hand, to order what the handlers do. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

for (const version of koaVersions) {
  describeLockMiddleware(koaAdapter(version));

  describe(`${version.name}: Koa specifics`, () => {
    let locker!: Locker;
    let redisServer!: RedisServer;
    const track = useLockFixture((fixture) => {
      ({ locker, redisServer } = fixture);
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

    it('keeps the lock until the handler of an aborted request settled: a second request never runs beside it', async () => {
      let inside = 0;
      let mostInside = 0;
      const entered = { a: deferred(), b: deferred() };
      const leave = { a: deferred(), b: deferred() };
      const aClosed = deferred();
      const handles: Record<string, Lock | undefined> = {};
      const server = await serve((_app, router) =>
        router.get('/orders/:id', lock({ locker, key: 'abort:{params.id}', wait: 5_000 }), async (ctx) => {
          const who = ctx.query.who as 'a' | 'b';
          inside += 1;
          mostInside = Math.max(mostInside, inside);
          handles[who] = ctx.state.lock;
          ctx.res.once('close', () => {
            if (who === 'a') aClosed.resolve();
          });
          entered[who].resolve();
          await leave[who].promise;
          inside -= 1;
          ctx.body = { who };
        }),
      );
      const a = openRequest(server, '/orders/1?who=a');
      await entered.a.promise;
      a.abort();
      // The server saw the abort: its response closed while the handler still runs.
      await aClosed.promise;
      const b = request(server)
        .get('/orders/1?who=b')
        .then((response) => response);
      // B either got in (the bug) or waits for the lock: it subscribes to the lock's release
      // channel only after a refused attempt.
      const admin = redisServer.client();
      const bWaits = async () => ((await admin.pubsub('CHANNELS', '*abort:1*')) as string[]).length > 0;
      let bIn = false;
      entered.b.promise.then(() => {
        bIn = true;
      });
      await waitFor('B to enter or to wait for the lock', async () => bIn || (await bWaits()), {
        timeout: 5_000,
        interval: 10,
      });
      const heldWhileAInside = {
        released: handles.a?.released,
        held: (await locker.inspect('abort:1')).held,
      };
      leave.a.resolve();
      await entered.b.promise;
      leave.b.resolve();
      const answered = await b;
      expect(heldWhileAInside).toEqual({ released: false, held: true });
      expect(mostInside).toBe(1);
      expect([answered.status, answered.body]).toEqual([200, { who: 'b' }]);
      await waitFor('abort:1 to be free', async () => !(await locker.isLocked('abort:1')), {
        timeout: 5_000,
        interval: 10,
      });
    });

    it('refuses a stateKey that is null or reaches the prototype of ctx.state, naming it', () => {
      for (const stateKey of ['__proto__', 'constructor', 'prototype', null]) {
        expect(() => lock({ locker, key: 'k', stateKey: stateKey as string })).toThrow(
          expect.objectContaining({
            name: 'InvalidOptionError',
            code: 'ERR_LOCK_INVALID_OPTION',
            option: 'stateKey',
            value: stateKey,
            message: expect.stringContaining(JSON.stringify(stateKey)),
          }),
        );
      }
      expect(() => lock({ locker, key: 'k', stateKey: 'orderLock' })).not.toThrow();
    });

    it('answers lock handed to a route uncalled with an error showing the call, not the context, and never runs the route', async () => {
      const secret = 'Bearer hunter2-not-to-be-logged';
      const route = vi.fn<Middleware>((ctx) => {
        ctx.body = { ran: true };
      });
      const failures: unknown[] = [];
      const server = await serve((app, router) => {
        app.use(answerErrors);
        app.use(async (_ctx, next) => {
          try {
            await next();
          } catch (error) {
            failures.push(error);
            throw error;
          }
        });
        router.post('/orders/:id', lock as unknown as Middleware, route);
      });
      const answer = await request(server).post('/orders/1').set('Authorization', secret);
      expect(route).not.toHaveBeenCalled();
      await expectUncalledLockRefusal(answer, failures, secret, 'router');
    });

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

    it('leaves ctx.state.lock undefined after a gate that ran unlocked (skipped), not the handle of an earlier gate', async () => {
      const server = await serve((_app, router) =>
        router.get(
          '/transfers/:from/:to',
          lock({ locker, key: 'account:{params.from}' }),
          lock({ locker, key: 'account:{params.to}', skip: () => true }),
          (ctx) => {
            ctx.body = { key: ctx.state.lock?.key ?? null };
          },
        ),
      );
      const response = await request(server).get('/transfers/1/2');
      expect([response.status, response.body]).toEqual([200, { key: null }]);
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
      const holder = await locker.acquire('order:2', { ttl: 10_000 });
      const busy = await request(server).get('/orders/2');
      const custom = await request(server).get('/custom/2');
      const { ttl: left } = await locker.inspect('order:2');
      await holder.release();
      expect([busy.status, busy.headers['retry-after'], busy.headers['content-type']]).toEqual([
        409,
        expect.stringMatching(/^\d+$/),
        'application/problem+json',
      ]);
      expectRetryAfterFromLease(Number(busy.headers['retry-after']), left);
      expect([custom.status, custom.body]).toEqual([409, { custom: 'busy', retryAfter: expect.any(Number) }]);
      expectRetryAfterFromLease(custom.body.retryAfter, left);
    });

    it.each<[string, string, RefusalHandler | undefined]>([
      ['the default answer', 'cut', undefined],
      [
        'a handler answering through ctx',
        'cut',
        (ctx, refusal) => {
          ctx.status = refusal.statusCode;
          ctx.set('Retry-After', String(refusal.retryAfter));
          ctx.body = { retry: true };
        },
      ],
      [
        'a handler that throws',
        'cut',
        (_ctx, refusal) => {
          throw Object.assign(new Error('busy'), { status: refusal.statusCode });
        },
      ],
      [
        'a handler that takes the response over',
        'answered 200 busy',
        (ctx) => {
          ctx.respond = false;
          ctx.res.end('busy');
        },
      ],
    ])(
      'with %s, a refused response whose headers an earlier middleware already sent ends %s',
      async (_, outcome, handler) => {
        const server = await serve((app, router) => {
          // Koa logs the handler's error; that error is what one case makes.
          app.silent = true;
          router.get(
            '/orders/:id',
            async (ctx, next) => {
              ctx.status = 200;
              ctx.flushHeaders();
              await next();
            },
            lock({ locker, key: 'order:{params.id}', wait: 0, handler }),
            (ctx) => {
              ctx.body = 'ran';
            },
          );
        });
        const holder = await locker.acquire('order:12', { ttl: 5_000 });
        const refused = await request(server)
          .get('/orders/12')
          .timeout(3_000)
          .then(
            (response) => `answered ${response.status} ${response.text}`,
            (error: { timeout?: number }) => (error.timeout ? 'left open' : 'cut'),
          );
        await holder.release();
        expect(refused).toBe(outcome);
      },
    );

    /** A route streaming `chunks`, then failing once `fail` settles: a failed file read or upstream fetch. */
    async function serveFailingStream(chunks: readonly string[], fail: Promise<void>): Promise<Server> {
      return serve((app, router) => {
        // Koa logs the stream error; that error is what the test makes.
        app.silent = true;
        router.get('/export/:id', lock({ locker, key: 'export:{params.id}' }), (ctx) => {
          const left = [...chunks];
          ctx.type = 'text/plain';
          ctx.body = new Readable({
            read() {
              const chunk = left.shift();
              if (chunk !== undefined) this.push(chunk);
              else fail.then(() => this.destroy(new Error('the source failed')));
            },
          });
        });
      });
    }

    const outcomeOf = (body: Promise<string>) =>
      body.then(
        (text) => `ended ${text}`,
        () => 'cut',
      );

    it('cuts the response of a streamed body that fails after its first byte, and releases the lock', async () => {
      const fail = deferred();
      const server = await serveFailingStream(['first'], fail.promise);
      const failing = openRequest(server, '/export/1');
      expect(await failing.firstChunk).toBe('first');
      fail.resolve();
      // Koa 2 alone leaves this response open, and the lock with it, while the client waits.
      await waitFor('export:1 to be free', async () => !(await locker.isLocked('export:1')), {
        timeout: 5_000,
        interval: 10,
      });
      expect(await outcomeOf(failing.body)).toBe('cut');
    });

    it("keeps Koa's answer to a streamed body that fails before its first byte, and its keep-alive connection", async () => {
      const server = await serveFailingStream([], Promise.resolve());
      const accepted = acceptedConnections(server);
      const client = await pipeline(server, ['/export/2', '/export/2']);
      await waitFor(
        'both answers, or the connection cut',
        async () => client.responses() === 2 || accepted[0]?.socket.destroyed === true,
        { timeout: 5_000, interval: 10 },
      );
      await waitFor('export:2 to be free', async () => !(await locker.isLocked('export:2')), {
        timeout: 5_000,
        interval: 10,
      });
      client.destroy();
      // Koa 2 still answers then, with a 500; Koa 3 cuts the response itself.
      const expected = version.name === 'Koa 2' ? [2, 'HTTP/1.1 500 '] : [0, ''];
      expect([client.responses(), client.received().slice(0, 13)]).toEqual(expected);
    });

    it('cuts the response of a handler that throws after sending the headers, and releases the lock', async () => {
      const server = await serve((app, router) => {
        // Koa logs the error; that error is what the test makes.
        app.silent = true;
        router.get('/events/:id', lock({ locker, key: 'events:{params.id}' }), async (ctx) => {
          // A server-sent event stream written by hand, whose source then fails.
          ctx.status = 200;
          ctx.type = 'text/event-stream';
          ctx.flushHeaders();
          ctx.res.write('data: first\n\n');
          await new Promise((resolve) => setImmediate(resolve));
          throw new Error('the event source failed');
        });
      });
      const failing = openRequest(server, '/events/1');
      expect(await failing.firstChunk).toBe('data: first\n\n');
      // Koa answers nothing once the headers are out and leaves the response open, the lock with it.
      await waitFor('events:1 to be free', async () => !(await locker.isLocked('events:1')), {
        timeout: 5_000,
        interval: 10,
      });
      expect(await outcomeOf(failing.body)).toBe('cut');
    });

    it('answers a handler that throws undefined under the lock with a 500, and releases the lock', async () => {
      const server = await serve((app, router) => {
        // Koa logs the error; that error is what the test makes.
        app.silent = true;
        router.get('/orders/:id', lock({ locker, key: 'nullish:{params.id}' }), async () => {
          throw undefined;
        });
      });
      // Koa's ctx.onerror(undefined) returns without answering: the response, and the lock with
      // it, would stay open for as long as the client waits.
      const failed = await request(server).get('/orders/1').timeout(3_000);
      expect(failed.status).toBe(500);
      await waitFor('nullish:1 to be free', async () => !(await locker.isLocked('nullish:1')), {
        timeout: 5_000,
        interval: 10,
      });
    });

    it('answers a key function, skip or refusal handler that throws undefined or null as one that throws an Error: 500', async () => {
      const server = await serve((app, router) => {
        // Koa logs the errors; those errors are what the test makes.
        app.silent = true;
        const route: Middleware = (ctx) => {
          ctx.body = { locked: ctx.state.lock !== undefined };
        };
        router.get(
          '/error/:id',
          lock({
            locker,
            key: () => {
              throw new Error('no key today');
            },
          }),
          route,
        );
        router.get(
          '/key/:id',
          lock({
            locker,
            key: () => {
              throw undefined;
            },
          }),
          route,
        );
        router.get(
          '/skip/:id',
          lock({ locker, key: 'skip:{params.id}', skip: () => Promise.reject(null) }),
          route,
        );
        router.get(
          '/handler/:id',
          lock({
            locker,
            key: 'handler:{params.id}',
            wait: 0,
            handler: () => {
              throw undefined;
            },
          }),
          route,
        );
      });
      const holder = await locker.acquire('handler:1', { ttl: 10_000 });
      const answers = [];
      // Koa's ctx.onerror(undefined) returns without answering: each would wait out the timeout.
      for (const path of ['/error/1', '/key/1', '/skip/1', '/handler/1']) {
        const answer = await request(server).get(path).timeout(3_000);
        answers.push([answer.status, answer.text]);
      }
      await holder.release();
      expect(answers).toEqual(Array(4).fill([500, 'Internal Server Error']));
    });

    it('leaves a response whose headers are out to an upstream middleware that answers the error', async () => {
      const server = await serve((app, router) => {
        app.use(async (ctx, next) => {
          try {
            await next();
          } catch {
            ctx.res.end('data: failed\n\n');
          }
        });
        router.get('/events/:id', lock({ locker, key: 'events:{params.id}' }), async (ctx) => {
          ctx.status = 200;
          ctx.flushHeaders();
          ctx.res.write('data: first\n\n');
          throw new Error('the event source failed');
        });
      });
      const answered = openRequest(server, '/events/2');
      expect(await outcomeOf(answered.body)).toBe('ended data: first\n\ndata: failed\n\n');
      await waitFor('events:2 to be free', async () => !(await locker.isLocked('events:2')), {
        timeout: 5_000,
        interval: 10,
      });
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
      // Koa has no app.post: the warning shows the router's.
      expect(logger.warn.mock.calls[0]![0]).toMatchObject({
        code: 'ERR_LOCK_HTTP_NO_PARAMS',
        message: expect.stringMatching(
          /Pass it to the route itself: router\.post\('\/orders\/:id', lock\(\.\.\.\), handler\)$/,
        ),
      });
    });

    it('takes no declared params from a route that called next() before it: app.use after the router is not that route', async () => {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const server = await serve((app) => {
        app.use(answerErrors);
        const orders = new Router();
        // @koa/router leaves ctx.routerPath and ctx.matched set for the middleware after it.
        orders.get('/orders{/:id}', (_ctx, next) => next());
        app.use(orders.routes());
        app.use(lock({ locker, key: 'order:{params.id}', logger }));
      });
      const response = await request(server).get('/orders');
      expect([response.status, response.body.code]).toEqual([500, 'ERR_LOCK_HTTP_MISSING_PARAM']);
      expect(logger.warn.mock.calls.map(([warning]) => warning.code)).toEqual(['ERR_LOCK_HTTP_NO_PARAMS']);
    });

    it('reads the matched routes only for a param placeholder that finds no value', async () => {
      let matchedReads = 0;
      const server = await serve((_app, router) => {
        const countReads: Middleware = (ctx, next) => {
          const { matched } = ctx as { matched?: unknown };
          Object.defineProperty(ctx, 'matched', {
            get: () => {
              matchedReads += 1;
              return matched;
            },
          });
          return next();
        };
        router.get('/orders{/:id}', countReads, lock({ locker, key: 'order:{params.id}' }), (ctx) => {
          ctx.body = { key: ctx.state.lock?.key };
        });
      });
      const responses = [await request(server).get('/orders/7'), await request(server).get('/orders/8')];
      expect(responses.map((r) => [r.status, r.body])).toEqual([
        [200, { key: 'order:7' }],
        [200, { key: 'order:8' }],
      ]);
      expect(matchedReads).toBe(0);
    });

    it("tells a left-out optional param of a nested router's route from one it lacks, by the running route alone", async () => {
      const server = await serve((app, router) => {
        app.use(answerErrors);
        const shop = new Router();
        shop.get('/orders{/:id}', lock({ locker, key: '{params.shop}/order:{params.id}' }), (ctx) => {
          ctx.body = { key: ctx.state.lock?.key };
        });
        shop.get('/carts{/:id}', lock({ locker, key: 'cart:{params.cartId}' }), (ctx) => {
          ctx.body = { ok: true };
        });
        // Matches the GET's path too, so it is in ctx.matched: its param is not the GET route's.
        shop.post('/carts/:cartId', (ctx) => {
          ctx.body = { ok: true };
        });
        router.use('/shops/:shop', shop.routes());
      });
      const responses = await Promise.all(
        ['/shops/a/orders', '/shops/a/orders/7', '/shops/a/carts/1'].map((url) => request(server).get(url)),
      );
      expect(responses.map((r) => [r.status, r.body])).toEqual([
        [400, { code: 'ERR_LOCK_HTTP_MISSING_VALUE' }],
        [200, { key: 'a/order:7' }],
        [500, { code: 'ERR_LOCK_HTTP_MISSING_PARAM' }],
      ]);
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
