import http, { type Server } from 'node:http';
import type { Lock, Locker } from '@lock/core';
import { waitFor } from '@lock/testing';
import type express5 from 'express';
import type { RequestHandler } from 'express';
import request from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import { lock, locked, type RefusalHandler } from '../src/index.js';
import { answerErrors, expressAdapter, expressVersions } from './express-adapter.js';
import { useLockFixture } from './support/fixture.js';
import { listen, openRequest } from './support/http.js';
import { describeLockMiddleware } from './support/lock-suite.js';
import { expectRetryAfterFromLease, Gate } from './support/recorder.js';
import { expectUncalledLockRefusal } from './support/uncalled.js';

for (const version of expressVersions) {
  describeLockMiddleware(expressAdapter(version));

  describe(`${version.name}: Express specifics`, () => {
    let locker!: Locker;
    const track = useLockFixture((fixture) => {
      ({ locker } = fixture);
    });

    async function serve(build: (app: ReturnType<typeof express5>) => void): Promise<Server> {
      const app = version.express();
      build(app);
      app.use(answerErrors);
      const server = await listen(http.createServer(app));
      track(server);
      return server;
    }

    it.each(['lock', 'locked'] as const)(
      'with %s(), holds the lock until a res.end wrapper installed before it (express-session saving) has ended the response',
      async (gate) => {
        const saving = new Gate();
        let savingBegun = false;
        // What express-session does: its res.end saves the session, and ends the response once saved.
        const session: RequestHandler = (_req, res, next) => {
          const end = res.end as (...args: unknown[]) => unknown;
          res.end = function (this: unknown, ...args: unknown[]) {
            savingBegun = true;
            void saving.pass().then(() => end.apply(res, args));
            return res;
          } as typeof res.end;
          next();
        };
        const handler: RequestHandler = (_req, res) => {
          res.json({ ok: true });
        };
        const options = { locker, key: 'cart:{params.user}', wait: 0 };
        const server = await serve((app) => {
          app.get(
            '/carts/:user',
            session,
            gate === 'lock' ? lock(options) : locked(options, handler),
            handler,
          );
          app.get('/peek/:user', lock(options), handler);
        });
        const first = request(server)
          .get('/carts/u1')
          .then((response) => response.status);
        await waitFor('the session save to begin', async () => savingBegun, { timeout: 5_000 });
        expect((await request(server).get('/peek/u1')).status).toBe(409);
        saving.open();
        expect(await first).toBe(200);
        await waitFor('the lock to be released', async () => !(await locker.isLocked('cart:u1')), {
          timeout: 5_000,
        });
        expect((await request(server).get('/peek/u1')).status).toBe(200);
      },
    );

    it('stores the handle under requestPropertyName', async () => {
      const server = await serve((app) =>
        app.get(
          '/orders/:id',
          lock({ locker, key: 'order:{params.id}', requestPropertyName: 'orderLock' }),
          (req, res) => {
            const held = (req as unknown as { orderLock?: { key: string } }).orderLock;
            res.json({ key: held?.key, lock: req.lock ?? null });
          },
        ),
      );
      expect((await request(server).get('/orders/1')).body).toEqual({ key: 'order:1', lock: null });
    });

    it('leaves req.lock undefined after a gate that ran unlocked (skipped), not the handle of an earlier gate', async () => {
      const server = await serve((app) =>
        app.get(
          '/transfers/:from/:to',
          lock({ locker, key: 'account:{params.from}' }),
          lock({ locker, key: 'account:{params.to}', skip: () => true }),
          (req, res) => {
            res.json({ key: req.lock?.key ?? null });
          },
        ),
      );
      const response = await request(server).get('/transfers/1/2');
      expect([response.status, response.body]).toEqual([200, { key: null }]);
    });

    it('refuses a requestPropertyName that is null, on every request or reaches its prototype, naming it', () => {
      for (const requestPropertyName of [
        '__proto__',
        'constructor',
        'prototype',
        'params',
        'body',
        'query',
        'socket',
        // Node's own: a truthy _dumped never drains an unread body, and keep-alive stalls.
        '_dumped',
        '_consuming',
        'headers',
        'get',
        'on',
        null,
      ]) {
        expect(() => lock({ locker, key: 'k', requestPropertyName: requestPropertyName as string })).toThrow(
          expect.objectContaining({
            name: 'InvalidOptionError',
            code: 'ERR_LOCK_INVALID_OPTION',
            option: 'requestPropertyName',
            value: requestPropertyName,
            message: expect.stringContaining(JSON.stringify(requestPropertyName)),
          }),
        );
      }
      expect(() => lock({ locker, key: 'k', requestPropertyName: 'orderLock' })).not.toThrow();
    });

    for (const [factory, handed] of [
      ['lock', lock],
      ['locked', locked],
    ] as const) {
      it(`answers ${factory} handed to a route uncalled with an error showing the call, not the request, and never runs the route`, async () => {
        const secret = 'Bearer hunter2-not-to-be-logged';
        const route = vi.fn<RequestHandler>((_req, res) => {
          res.json({ ran: true });
        });
        const failures: unknown[] = [];
        const server = await serve((app) => {
          app.post('/orders/:id', handed as unknown as RequestHandler, route);
          app.use(((error, _req, _res, next) => {
            failures.push(error);
            next(error);
          }) as express5.ErrorRequestHandler);
        });
        const answer = await request(server).post('/orders/1').set('Authorization', secret);
        expect(route).not.toHaveBeenCalled();
        await expectUncalledLockRefusal(answer, failures, secret, 'app', factory);
      });
    }

    it('refuses an unknown option of locked() as one of its own, without its value', () => {
      const make = () => locked({ locker, key: 'k', handlr: 'hunter2-not-to-be-logged' } as never, () => {});
      expect(make).toThrow(
        /^unknown option "handlr" \(expected one of the locked\(\) options: locker, .*\)\. Did you mean "handler"\?$/,
      );
    });

    it('lets a custom handler answer a refusal', async () => {
      const handler = vi.fn<RefusalHandler>((_req, res, _next, refusal) => {
        res.status(refusal.statusCode).json({ custom: refusal.reason, retryAfter: refusal.retryAfter });
      });
      const server = await serve((app) =>
        app.get('/orders/:id', lock({ locker, key: 'order:{params.id}', wait: 0, handler }), (_req, res) => {
          res.json({ ok: true });
        }),
      );
      const holder = await locker.acquire('order:2', { ttl: 10_000 });
      const busy = await request(server).get('/orders/2');
      const { ttl: left } = await locker.inspect('order:2');
      await holder.release();
      expect([busy.status, busy.body]).toEqual([409, { custom: 'busy', retryAfter: expect.any(Number) }]);
      expectRetryAfterFromLease(busy.body.retryAfter, left);
      expect(handler.mock.calls[0]![3].problem).toMatchObject({ code: 'ERR_LOCK_BUSY' });
    });

    it('cuts a refused response whose headers an earlier middleware already sent, instead of leaving it open', async () => {
      const server = await serve((app) =>
        app.get(
          '/orders/:id',
          (_req, res, next) => {
            res.flushHeaders();
            next();
          },
          lock({ locker, key: 'order:{params.id}', wait: 0 }),
          (_req, res) => {
            res.end('ran');
          },
        ),
      );
      const holder = await locker.acquire('order:12', { ttl: 5_000 });
      const refused = await request(server)
        .get('/orders/12')
        .timeout(3_000)
        .then(
          () => 'answered',
          (error: { code?: string; timeout?: number }) => (error.timeout ? 'left open' : 'cut'),
        );
      await holder.release();
      expect(refused).toBe('cut');
    });

    it('answers a key function, skip or refusal handler that fails without a reason as an error: the route never runs unlocked', async () => {
      const route: RequestHandler = (req, res) => {
        res.json({ locked: req.lock !== undefined });
      };
      const server = await serve((app) => {
        app.get('/key/:id', lock({ locker, key: () => Promise.reject(undefined) }), route);
        app.get(
          '/skip/:id',
          lock({ locker, key: 'skip:{params.id}', skip: () => Promise.reject(null) }),
          route,
        );
        app.get(
          '/handler/:id',
          lock({ locker, key: 'handler:{params.id}', wait: 0, handler: () => Promise.reject(0) }),
          route,
        );
      });
      const holder = await locker.acquire('handler:1', { ttl: 5_000 });
      const answers = [];
      for (const path of ['/key/1', '/skip/1', '/handler/1']) {
        const answer = await request(server).get(path);
        answers.push([answer.status, answer.body]);
      }
      await holder.release();
      expect(answers).toEqual(Array(3).fill([500, { code: null }]));
    });

    describe('locked()', () => {
      /**
       * A route that parks its handler until the test lets it finish: the client of a request to
       * `path` goes away while the handler runs, and the lock must stay held until it has settled.
       */
      async function abortMidHandler(
        mount: (app: ReturnType<typeof express5>, route: RequestHandler) => void,
        path: string,
        key: string,
      ) {
        const entered = new Gate();
        const closed = new Gate();
        const finish = new Gate();
        let handle: Lock | undefined;
        const server = await serve((app) =>
          mount(app, async (req, res) => {
            handle = req.lock;
            res.once('close', () => closed.open());
            entered.open();
            await finish.pass();
            res.json({ late: true });
          }),
        );
        const client = openRequest(server, path);
        await entered.pass();
        client.abort();
        await closed.pass();
        // By the next macrotask every continuation of the 'close' has run: a lock that followed
        // only the response would have been released by then.
        await new Promise((resolve) => setImmediate(resolve));
        expect(handle!.released).toBe(false);
        expect((await request(server).get(path)).status).toBe(409);
        finish.open();
        await waitFor(`${key} to be free`, async () => !(await locker.isLocked(key)));
        expect(handle!.released).toBe(true);
        expect((await request(server).get(path)).body).toEqual({ late: true });
      }

      it('keeps the lock after the client went away until the handler has settled', async () => {
        await abortMidHandler(
          (app, route) =>
            app.get('/orders/:id', locked({ locker, key: 'order:{params.id}', wait: 0 }, route)),
          '/orders/31',
          'order:31',
        );
      });

      it('under a lock() of the same key before it, still holds the lock until the handler has settled', async () => {
        const options = { locker, key: 'order:{params.id}', wait: 0 };
        await abortMidHandler(
          (app, route) => {
            const router = version.express.Router({ mergeParams: true });
            router.get('/', locked(options, route));
            app.use('/orders/:id', lock(options), router);
          },
          '/orders/33',
          'order:33',
        );
      });

      it('sends what the handler throws or rejects with to next(err), and frees the lock', async () => {
        const failure = () => Object.assign(new Error('the handler failed'), { code: 'E_HANDLER' });
        const server = await serve((app) => {
          app.get(
            '/sync/:id',
            locked({ locker, key: 'sync:{params.id}' }, () => {
              throw failure();
            }),
          );
          app.get(
            '/async/:id',
            locked({ locker, key: 'async:{params.id}' }, async () => {
              throw failure();
            }),
          );
        });
        for (const path of ['/sync/1', '/async/1']) {
          const failed = await request(server).get(path);
          expect([failed.status, failed.body]).toEqual([500, { code: 'E_HANDLER' }]);
        }
        await waitFor('both locks to be free', async () => {
          const held = await Promise.all(['sync:1', 'async:1'].map((key) => locker.isLocked(key)));
          return !held.includes(true);
        });
      });

      it('sends a route that rejects without a reason to next(err) as an error, not on to the next route', async () => {
        const server = await serve((app) => {
          app.get(
            '/orders/:id',
            locked({ locker, key: 'order:{params.id}' }, () => Promise.reject(null)),
          );
          app.get('/orders/:id', (_req, res) => {
            res.json({ nextRoute: true });
          });
        });
        const failed = await request(server).get('/orders/35');
        expect([failed.status, failed.body]).toEqual([500, { code: null }]);
        await waitFor('the lock to be free', async () => !(await locker.isLocked('order:35')));
      });

      it('runs the route without the lock when a refusal handler calls next()', async () => {
        const server = await serve((app) =>
          app.get(
            '/orders/:id',
            locked(
              { locker, key: 'order:{params.id}', wait: 0, handler: (_req, _res, next) => next() },
              (req, res) => {
                res.json({ locked: req.lock !== undefined });
              },
            ),
          ),
        );
        const holder = await locker.acquire('order:32', { ttl: 5_000 });
        const anyway = await request(server).get('/orders/32');
        await holder.release();
        expect(anyway.body).toEqual({ locked: false });
        expect((await request(server).get('/orders/32')).body).toEqual({ locked: true });
      });

      it('runs the route when a refusal handler calls next(null), which Express reads as next()', async () => {
        const server = await serve((app) =>
          app.get(
            '/orders/:id',
            locked(
              {
                locker,
                key: 'order:{params.id}',
                wait: 0,
                // A Node callback hands its `null` error on: `(error) => next(error)`.
                handler: (_req, _res, next) => setImmediate(() => next(null)),
              },
              (req, res) => {
                res.json({ locked: req.lock !== undefined });
              },
            ),
          ),
        );
        const holder = await locker.acquire('order:34', { ttl: 5_000 });
        const anyway = await request(server).get('/orders/34');
        await holder.release();
        expect([anyway.status, anyway.body]).toEqual([200, { locked: false }]);
      });

      it('refuses a route that is not a function, naming it', () => {
        expect(() => locked({ locker, key: 'k' }, 'pay' as never)).toThrow(
          expect.objectContaining({ code: 'ERR_LOCK_INVALID_OPTION', option: 'route', value: 'pay' }),
        );
      });
    });

    it('names the placeholders and the reason, not the value, when a client value makes a key the locker refuses', async () => {
      const server = await serve((app) => {
        app.get('/search', lock({ locker, key: 'search:{query.q}:{headers.x-tenant}' }), (_req, res) => {
          res.json({ ok: true });
        });
        app.get('/made', lock({ locker, key: (req) => `made:${String(req.query.q)}` }), (_req, res) => {
          res.json({ ok: true });
        });
        app.use(((error, _req, res, _next) => {
          res.status(error.status).json({ code: error.code, message: error.message });
        }) as express5.ErrorRequestHandler);
      });
      const huge = 'x'.repeat(5_000);
      const fromTemplate = await request(server).get(`/search?q=${huge}`).set('X-Tenant', 'acme');
      const fromFunction = await request(server).get(`/made?q=${huge}`);
      expect([fromTemplate.status, fromTemplate.body]).toEqual([
        400,
        {
          code: 'ERR_LOCK_HTTP_BAD_VALUE',
          message:
            "the lock key made from this request's {query.q}, {headers.x-tenant} is refused by the locker: longer than 4096 bytes",
        },
      ]);
      expect([fromFunction.status, fromFunction.body]).toEqual([
        500,
        {
          code: 'ERR_LOCK_HTTP_BAD_KEY',
          message:
            'the lock key the key function made from this request is refused by the locker: longer than 4096 bytes',
        },
      ]);
    });

    it('warns once when mounted with app.use, where there are no route params, and answers 500', async () => {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const server = await serve((app) => {
        app.use(lock({ locker, key: 'order:{params.id}', logger }));
        app.get('/orders/:id', (_req, res) => {
          res.json({ ok: true });
        });
      });
      const responses = [await request(server).get('/orders/1'), await request(server).get('/orders/2')];
      expect(responses.map((r) => [r.status, r.body.code])).toEqual([
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
      ]);
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn.mock.calls[0]![0]).toMatchObject({
        code: 'ERR_LOCK_HTTP_NO_PARAMS',
        message: expect.stringMatching(
          /Pass it to the route itself: app\.post\('\/orders\/:id', lock\(\.\.\.\), handler\)$/,
        ),
      });
    });

    it('takes no params from a route that called next() before it: app.use after that route still has none', async () => {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const server = await serve((app) => {
        // Express sets req.route on a match and leaves it there for the layers after the route.
        app.get(version.optionalIdPath, (_req, _res, next) => next());
        app.use(lock({ locker, key: 'order:{params.id}', logger }));
      });
      const responses = [await request(server).get('/orders/7'), await request(server).get('/orders')];
      expect(responses.map((r) => [r.status, r.body.code])).toEqual([
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
      ]);
      expect(logger.warn.mock.calls.map(([warning]) => warning.code)).toEqual(['ERR_LOCK_HTTP_NO_PARAMS']);
    });

    it("reads the route's path only for a param placeholder that finds no value", async () => {
      let pathReads = 0;
      const server = await serve((app) => {
        const route = app
          .route(version.optionalIdPath)
          .get(lock({ locker, key: 'order:{params.id}' }), (req, res) => {
            res.json({ key: req.lock?.key });
          });
        const { path } = route;
        Object.defineProperty(route, 'path', {
          get: () => {
            pathReads += 1;
            return path;
          },
        });
      });
      const responses = [await request(server).get('/orders/7'), await request(server).get('/orders/8')];
      expect(responses.map((r) => [r.status, r.body])).toEqual([
        [200, { key: 'order:7' }],
        [200, { key: 'order:8' }],
      ]);
      expect(pathReads).toBe(0);
    });

    it("tells a left-out optional param of a router's route from one it lacks, with the parent's params merged", async () => {
      const server = await serve((app) => {
        const router = version.express.Router({ mergeParams: true });
        router.get(
          version.optionalIdPath,
          lock({ locker, key: '{params.shop}/order:{params.id}' }),
          (req, res) => {
            res.json({ key: req.lock?.key });
          },
        );
        router.get('/carts', lock({ locker, key: 'cart:{params.id}' }), (_req, res) => {
          res.json({ ok: true });
        });
        app.use('/shops/:shop', router);
      });
      const responses = await Promise.all(
        ['/shops/a/orders', '/shops/a/orders/7', '/shops/a/carts'].map((url) => request(server).get(url)),
      );
      expect(responses.map((r) => [r.status, r.body])).toEqual([
        [400, { code: 'ERR_LOCK_HTTP_MISSING_VALUE' }],
        [200, { key: 'a/order:7' }],
        [500, { code: 'ERR_LOCK_HTTP_MISSING_PARAM' }],
      ]);
    });

    it('reads the parsed body, and warns once when no body parser ran', async () => {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const options = { locker, key: 'pay:{body.order.id}', logger };
      const server = await serve((app) => {
        app.post('/pay', version.express.json(), lock(options), (req, res) => {
          res.json({ key: req.lock?.key });
        });
        app.post('/raw', lock(options), (_req, res) => {
          res.json({ ok: true });
        });
      });
      const paid = await request(server)
        .post('/pay')
        .send({ order: { id: 7 } });
      const noParser = [
        await request(server)
          .post('/raw')
          .send({ order: { id: 7 } }),
        await request(server).post('/raw'),
      ];
      expect(paid.body).toEqual({ key: 'pay:7' });
      expect(noParser.map((r) => r.status)).toEqual([400, 400]);
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn.mock.calls[0]![0]).toMatchObject({ code: 'ERR_LOCK_HTTP_NO_BODY' });
    });
  });
}

describe('Express 4: a route path read by path-to-regexp 0.1', () => {
  const express4 = expressVersions.find((version) => version.name === 'Express 4')!.express;
  let locker!: Locker;
  const track = useLockFixture((fixture) => {
    ({ locker } = fixture);
  });

  it('takes a name after a wildcard for the text it is there, not for a param the route declares', async () => {
    const app = express4();
    // `*` is a wildcard of its own (req.params[0]) and `name` literal text, unlike `*name` on Express 5.
    app.get('/files/*name', lock({ locker, key: 'file:{params.name}' }), (_req, res) => {
      res.json({ ok: true });
    });
    app.use(answerErrors);
    const server = await listen(http.createServer(app));
    track(server);
    const response = await request(server).get('/files/x/name');
    expect([response.status, response.body.code]).toEqual([500, 'ERR_LOCK_HTTP_MISSING_PARAM']);
  });
});
