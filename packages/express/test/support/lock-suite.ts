import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Server } from 'node:http';
import { Readable } from 'node:stream';
import { createLocker, type Lock, type Locker } from '@lock/core';
import { type RedisServer, refusalHiding, startRedis, waitFor } from '@lock/testing';
import { useRedis } from '@lock/testing/vitest';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { acceptedConnections, close, openRequest, pipeline, unreadRequest } from './http.js';
import { Gate, Intervals, observed, within } from './recorder.js';

/** One route of a test app: the lock options and a framework-neutral handler. */
export interface TestRoute {
  /** Express / @koa/router path, such as `/orders/:id`; served for GET. */
  readonly path: string;
  /** Options of the adapter's `lock()`. */
  readonly options: Record<string, unknown>;
  /** Gets the handle the middleware stored (undefined when it ran unlocked); returns a JSON body or a Readable to stream. */
  readonly handle: (lock: Lock | undefined) => Promise<unknown>;
  /** How many times the route passes `lock()` with these options (a router's lock and its route's). Default: 1. */
  readonly gates?: number;
  /** Runs between two gates with the handle the first stored (slow work in between: auth, a body parser). Default: none. */
  readonly betweenGates?: (lock: Lock | undefined) => Promise<void>;
}

/** What the shared suite needs from one framework version. */
export interface HttpLockAdapter {
  readonly name: string;
  /** The route path `/orders` with an optional param `id` after it, in the framework's syntax. */
  readonly optionalIdPath: string;
  /** The adapter's `lock()` (creation errors are thrown from it). */
  lock(options: Record<string, unknown>): unknown;
  /**
   * A listening server serving `routes` behind `lock()`, whose error handling answers an error
   * with its `status` (500 without one) and the body `{ code }`.
   */
  serve(routes: readonly TestRoute[]): Promise<Server>;
}

const bound = { timeout: 5_000, interval: 10 };

/** The behaviour every adapter shares, run once per framework version. */
export function describeLockMiddleware(adapter: HttpLockAdapter): void {
  describe(`${adapter.name}: the lock middleware`, () => {
    let redisServer: RedisServer;
    let locker: Locker;
    let acquires: ReturnType<typeof observed>['acquires'];
    let servers: Server[] = [];

    beforeAll(async () => {
      redisServer = await startRedis();
      const watched = observed(createLocker({ redis: redisServer.client() }));
      locker = watched.locker;
      acquires = watched.acquires;
    });
    afterAll(async () => {
      await locker.close();
      await redisServer.stop();
    });
    afterEach(async () => {
      await Promise.all(servers.map(close));
      servers = [];
      acquires.length = 0;
      await redisServer.client().flushall();
    });

    async function serve(...routes: TestRoute[]): Promise<Server> {
      const server = await adapter.serve(routes);
      servers.push(server);
      return server;
    }

    const freed = (key: string) =>
      waitFor(`${key} to be free`, async () => !(await locker.isLocked(key)), bound);

    it('runs 20 concurrent requests for one id one at a time, and all succeed with a long wait', async () => {
      const intervals = new Intervals();
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 20_000 },
        handle: () =>
          intervals.record(() => new Promise((resolve) => setTimeout(() => resolve({ ok: true }), 5))),
      });
      const responses = await Promise.all(Array.from({ length: 20 }, () => request(server).get('/orders/7')));
      expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
      expect(intervals.spans).toHaveLength(20);
      expect(intervals.overlapping()).toBe(0);
      // The last lock is released when its response closes, which the client may see after the
      // body: it must be freed then, not before the answer arrived.
      await freed('order:7');
    });

    it('with wait 0 lets exactly one of 20 in and answers the others 409, Retry-After and problem+json', async () => {
      const inside = new Gate();
      let entered = 0;
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 0, ttl: 10_000 },
        handle: async () => {
          entered += 1;
          await inside.pass();
          return { ok: true };
        },
      });
      let refused = 0;
      const responses = await Promise.all(
        Array.from({ length: 20 }, () =>
          request(server)
            .get('/orders/9')
            .then((response) => {
              if (response.status === 409) refused += 1;
              if (refused === 19) inside.open();
              return response;
            }),
        ),
      );
      expect(entered).toBe(1);
      const busy = responses.filter((r) => r.status === 409);
      expect(responses.filter((r) => r.status === 200)).toHaveLength(1);
      expect(busy).toHaveLength(19);
      for (const response of busy) {
        expect(response.headers['retry-after']).toMatch(/^([1-9]|10)$/);
        expect(response.headers['content-type']).toBe('application/problem+json');
        expect(JSON.parse(response.text)).toEqual({
          type: 'urn:lock:problem:busy',
          title: 'Resource busy',
          status: 409,
          detail: expect.any(String),
          code: 'ERR_LOCK_BUSY',
        });
        expect(response.text).not.toContain('order:9');
      }
    });

    it("answers 409 with Retry-After from the holder's lease when the wait runs out", async () => {
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 100 },
        handle: async () => ({ ok: true }),
      });
      const holder = await locker.acquire('order:11', { ttl: 4_500 });
      const busy = await request(server).get('/orders/11');
      await holder.release();
      expect([busy.status, busy.headers['retry-after'], JSON.parse(busy.text).code]).toEqual([
        409,
        expect.stringMatching(/^[45]$/),
        'ERR_LOCK_BUSY',
      ]);
      expect((await request(server).get('/orders/11')).status).toBe(200);
    });

    it.each([
      [
        'different ids',
        '/orders/:id',
        'order:{params.id}',
        ['/orders/1', '/orders/2'],
        ['order:1', 'order:2'],
      ],
      [
        'values that hold the separator',
        '/carts/:user/:sku',
        'cart:{params.user}:{params.sku}',
        ['/carts/a%3Ab/c', '/carts/a/b%3Ac'],
        ['cart:a\\:b:c', 'cart:a:b\\:c'],
      ],
    ])('runs requests for %s in parallel', async (_, path, key, urls, keys) => {
      const intervals = new Intervals();
      const bothInside = new Gate();
      let inside = 0;
      const server = await serve({
        path,
        options: { locker, key, wait: 20_000 },
        handle: (lock) =>
          intervals.record(async () => {
            inside += 1;
            if (inside === 2) bothInside.open();
            // Each waits until the other is inside too: only possible if they hold their locks at once.
            await bothInside.pass();
            return { key: lock?.key };
          }),
      });
      const responses = await Promise.all(urls.map((url) => request(server).get(url)));
      expect(responses.map((r) => [r.status, r.body.key])).toEqual(keys.map((k) => [200, k]));
      expect(intervals.overlapping()).toBe(1);
    });

    it('gives the handler the handle, with fences that increase request after request', async () => {
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}' },
        handle: async (lock) => ({ fence: lock?.fence, key: lock?.key, aborted: lock?.signal.aborted }),
      });
      const first = await request(server).get('/orders/3');
      const second = await request(server).get('/orders/3');
      expect(first.body).toEqual({ fence: expect.any(Number), key: 'order:3', aborted: false });
      expect(second.body.fence).toBeGreaterThan(first.body.fence);
    });

    it('runs the handler inside the lock: a nested using of the same key re-enters instead of waiting', async () => {
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}' },
        handle: (outer) =>
          locker.using('order:8', { wait: 0 }, async (inner) => ({ same: inner.fence === outer?.fence })),
      });
      const response = await request(server).get('/orders/8');
      expect([response.status, response.body]).toEqual([200, { same: true }]);
    });

    it('lets a request through a second lock of the same key (router and route) under the lock it holds', async () => {
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 2_000 },
        gates: 2,
        handle: async (lock) => ({ fence: lock?.fence, holds: (await locker.inspect('order:11')).holds }),
      });
      const response = await request(server).get('/orders/11');
      expect([response.status, response.body]).toEqual([200, { fence: expect.any(Number), holds: 1 }]);
      await waitFor('the lock released', async () => !(await locker.isLocked('order:11')));
    });

    it('takes the lock afresh at a second gate when the first lost it meanwhile: never lets the request in under a lost lock', async () => {
      let other: Lock | undefined;
      const server = await serve({
        path: '/orders/:id',
        // The lease is what runs out; the first gate's acquire must still come back within it
        // (a grant answered past its lease is given back, a 503 with wait: 0): 300 ms could be
        // one stalled round trip on a loaded host.
        options: { locker, key: 'order:12', ttl: 2_000, wait: 0 },
        gates: 2,
        // The first gate's fixed lease runs out while something slow runs, and another owner
        // takes the key before the second gate.
        betweenGates: async (lost) => {
          await new Promise((resolve) => lost!.signal.addEventListener('abort', resolve, { once: true }));
          other = await locker.acquire('order:12', { ttl: 10_000, wait: 2_000 });
        },
        handle: async (lock) => ({ fence: lock?.fence }),
      });
      const response = await request(server).get('/orders/12');
      expect(response.status).toBe(409);
      expect(await locker.isLocked('order:12')).toBe(true);
      await other!.release();
    });

    it('takes the lock afresh at a second gate when the first was released early meanwhile: never lets the request in unlocked', async () => {
      let first: Lock | undefined;
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:13', wait: 0 },
        gates: 2,
        betweenGates: async (lock) => {
          first = lock;
          await lock!.release();
        },
        handle: async (lock) => ({
          released: lock?.released,
          held: await locker.isLocked('order:13'),
          later: lock!.fence > first!.fence,
        }),
      });
      const response = await request(server).get('/orders/13');
      expect([response.status, response.body]).toEqual([200, { released: false, held: true, later: true }]);
      await freed('order:13');
    });

    it('stops waiting when the client goes away: the handler never runs and nothing stays locked', async () => {
      let ran = 0;
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 20_000 },
        handle: async () => {
          ran += 1;
          return { ok: true };
        },
      });
      const holder = await locker.acquire('order:5');
      const client = openRequest(server, '/orders/5');
      await waitFor('the request to wait for the lock', async () => acquires.length === 2, bound);
      client.abort();
      const waited = acquires[1]!;
      expect(await within(waited.result)).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
      await holder.release();
      await freed('order:5');
      expect(ran).toBe(0);
      expect((await request(server).get('/orders/5')).status).toBe(200);
      expect(ran).toBe(1);
    });

    it('holds the lock while a streamed body is written, and releases it after the last byte', async () => {
      const rest = new Gate();
      const server = await serve({
        path: '/files/:id',
        options: { locker, key: 'file:{params.id}', wait: 0 },
        handle: async () =>
          Readable.from(
            (async function* () {
              yield 'first\n';
              await rest.pass();
              yield 'last\n';
            })(),
          ),
      });
      const streaming = openRequest(server, '/files/1');
      expect(await streaming.firstChunk).toBe('first\n');
      const during = await request(server).get('/files/1');
      expect(during.status).toBe(409);
      rest.open();
      expect(await streaming.body).toBe('first\nlast\n');
      await freed('file:1');
      const after = await request(server).get('/files/1');
      expect(after.status).toBe(200);
      expect(after.text).toBe('first\nlast\n');
    });

    it('releases at once when the client aborts mid-stream', async () => {
      const rest = new Gate();
      const server = await serve({
        path: '/files/:id',
        options: { locker, key: 'file:{params.id}', ttl: 60_000 },
        handle: async () =>
          Readable.from(
            (async function* () {
              yield 'first\n';
              await rest.opened;
              yield 'last\n';
            })(),
          ),
      });
      const streaming = openRequest(server, '/files/2');
      expect(await streaming.firstChunk).toBe('first\n');
      expect(await locker.isLocked('file:2')).toBe(true);
      streaming.abort();
      await freed('file:2');
      rest.open();
    });

    it('releases the lock once the app ended a response the client does not read: the client cannot keep it', async () => {
      let ended = false;
      const server = await serve({
        path: '/orders/:id',
        // No ttl: a renewed lease, which only the end of the response lifetime ends.
        options: { locker, key: 'order:{params.id}', wait: 0 },
        handle: async () => {
          ended = true;
          // Far more than the sockets' buffers take: the rest waits for the client to read.
          return { receipt: 'x'.repeat(16 * 1024 * 1024) };
        },
      });
      const drop = await unreadRequest(server, '/orders/5');
      await waitFor('the handler to answer', async () => ended, bound);
      await freed('order:5');
      expect((await request(server).get('/orders/6')).status).toBe(200);
      drop();
    });

    describe('HTTP/1.1 pipelining', () => {
      /** Serves /orders/:id under a renewed lock: each handler records its key, then waits at its gate, if any. */
      async function gatedOrders(gateOf: (key: string | undefined) => Gate | undefined) {
        const entered: string[] = [];
        const server = await serve({
          path: '/orders/:id',
          // No ttl: a renewed lease, which only the end of the response lifetime ends.
          options: { locker, key: 'order:{params.id}', wait: 0 },
          handle: async (lock) => {
            entered.push(lock?.key ?? 'unlocked');
            await gateOf(lock?.key)?.pass();
            return { ok: true };
          },
        });
        return { server, entered };
      }

      it('releases the lock of a queued response once the app ended it: the client cannot keep it by holding the response before it open', async () => {
        const first = new Gate();
        const { server, entered } = await gatedOrders((key) => (key === 'order:1' ? first : undefined));
        const client = await pipeline(server, ['/orders/1', '/orders/2']);
        // The second handler ran and answered; its response is queued behind the first one's,
        // which stays open for as long as the first handler runs.
        await waitFor('both handlers to have run', async () => entered.length === 2, bound);
        expect(entered).toEqual(['order:1', 'order:2']);
        await freed('order:2');
        expect((await request(server).get('/orders/2')).status).toBe(200);
        expect(client.responses()).toBe(0);
        first.open();
        await waitFor('both queued responses to arrive', async () => client.responses() === 2, bound);
        await freed('order:1');
        client.destroy();
      });

      it('releases the lock of a queued response whose handler has not answered when the client disconnects', async () => {
        const second = new Gate();
        const first = new Gate();
        const { server, entered } = await gatedOrders((key) => (key === 'order:1' ? first : second));
        const client = await pipeline(server, ['/orders/1', '/orders/2']);
        await waitFor('both handlers to run', async () => entered.length === 2, bound);
        expect((await locker.inspect('order:2')).held).toBe(true);
        client.destroy();
        second.open();
        await freed('order:2');
        first.open();
        await freed('order:1');
        expect((await request(server).get('/orders/2')).status).toBe(200);
      });

      it('stops a queued request waiting for its lock when the client disconnects: it never takes it', async () => {
        const first = new Gate();
        const entered: string[] = [];
        const server = await serve({
          path: '/orders/:id',
          options: { locker, key: 'order:{params.id}', wait: 20_000 },
          handle: async (lock) => {
            entered.push(lock?.key ?? 'unlocked');
            if (lock?.key === 'order:1') await first.pass();
            return { ok: true };
          },
        });
        const holder = await locker.acquire('order:3');
        const client = await pipeline(server, ['/orders/1', '/orders/3']);
        await waitFor(
          'the second request to wait for its lock',
          // The test's own acquire of the holder, then the request's.
          async () => acquires.filter((a) => a.key === 'order:3').length === 2,
          bound,
        );
        client.destroy();
        const waited = acquires.filter((a) => a.key === 'order:3')[1]!;
        expect(await within(waited.result)).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
        await holder.release();
        first.open();
        await freed('order:1');
        expect((await locker.inspect('order:3')).held).toBe(false);
        expect(entered).toEqual(['order:1']);
        expect((await request(server).get('/orders/3')).status).toBe(200);
      });

      it("adds at most one 'close' listener to a keep-alive connection, and none once its requests are done", async () => {
        const go = new Gate();
        const ids = Array.from({ length: 15 }, (_, i) => i + 20);
        let entered = 0;
        const server = await serve({
          path: '/orders/:id',
          options: { locker, key: 'order:{params.id}', wait: 0 },
          handle: async () => {
            entered += 1;
            await go.pass();
            return { ok: true };
          },
        });
        const accepted = acceptedConnections(server);
        const client = await pipeline(
          server,
          ids.map((id) => `/orders/${id}`),
        );
        await waitFor('all 15 handlers to hold their locks', async () => entered === 15, bound);
        const [connection] = accepted;
        expect(accepted).toHaveLength(1);
        // For the one response being written: Node's listener, and Koa's (on-finished). For the
        // 15 requests holding their locks together: one of the middleware's, not 15.
        expect(connection!.socket.listenerCount('close')).toBeLessThanOrEqual(
          connection!.baselineCloseListeners + 3,
        );
        go.open();
        await waitFor('15 answers', async () => client.responses() === 15, bound);
        for (const id of ids) await freed(`order:${id}`);
        await waitFor(
          "the connection's 'close' listeners to be back to their baseline",
          async () => connection!.socket.listenerCount('close') === connection!.baselineCloseListeners,
          bound,
        );
        expect(connection!.socket.destroyed).toBe(false);
        // The same connection serves a later request, and still ends where it began.
        const before = client.responses();
        client.write('/orders/20');
        await waitFor('the later answer', async () => client.responses() === before + 1, bound);
        await freed('order:20');
        await waitFor(
          "the connection's 'close' listeners to be back to their baseline",
          async () => connection!.socket.listenerCount('close') === connection!.baselineCloseListeners,
          bound,
        );
        client.destroy();
      });
    });

    it('releases when the handler throws', async () => {
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', ttl: 60_000 },
        handle: async () => {
          throw Object.assign(new Error('the handler failed'), { code: 'E_HANDLER' });
        },
      });
      const failed = await request(server).get('/orders/4');
      expect(failed.status).toBe(500);
      expect(failed.body).toEqual({ code: 'E_HANDLER' });
      await freed('order:4');
    });

    it('answers 400 for a missing client value and 500 for a missing route param, without asking Redis', async () => {
      const server = await serve(
        { path: '/search', options: { locker, key: 'search:{query.q}' }, handle: async () => ({ ok: true }) },
        {
          path: '/tenant',
          options: { locker, key: 't:{headers.x-tenant}' },
          handle: async () => ({ ok: true }),
        },
        {
          path: '/orders/:id',
          options: { locker, key: 'order:{params.orderId}' },
          handle: async () => ({ ok: true }),
        },
      );
      const missing = await request(server).get('/search');
      const empty = await request(server).get('/search?q=');
      const repeated = await request(server).get('/search?q=1&q=2');
      const noHeader = await request(server).get('/tenant');
      const wrongParam = await request(server).get('/orders/1');
      expect([missing.status, empty.status, repeated.status, noHeader.status, wrongParam.status]).toEqual([
        400, 400, 400, 400, 500,
      ]);
      expect([missing.body, repeated.body, noHeader.body, wrongParam.body]).toEqual([
        { code: 'ERR_LOCK_HTTP_MISSING_VALUE' },
        { code: 'ERR_LOCK_HTTP_BAD_VALUE' },
        { code: 'ERR_LOCK_HTTP_MISSING_VALUE' },
        { code: 'ERR_LOCK_HTTP_MISSING_PARAM' },
      ]);
      expect(acquires).toHaveLength(0);
      const found = await request(server).get('/tenant').set('X-Tenant', 'acme');
      expect(found.status).toBe(200);
      expect(acquires.map((a) => a.key)).toEqual(['t:acme']);
    });

    it('answers 400 when a request leaves out an optional param the route declares, and 500 for one it does not declare, without asking Redis', async () => {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const server = await serve(
        {
          path: adapter.optionalIdPath,
          options: { locker, key: 'order:{params.id}', logger },
          handle: async (lock) => ({ key: lock?.key }),
        },
        {
          path: adapter.optionalIdPath.replace('/orders', '/carts'),
          options: { locker, key: 'cart:{params.cartId}', logger },
          handle: async () => ({ ok: true }),
        },
      );
      const omitted = [await request(server).get('/orders'), await request(server).get('/orders/')];
      const undeclared = [await request(server).get('/carts'), await request(server).get('/carts/1')];
      expect([...omitted, ...undeclared].map((r) => [r.status, r.body.code])).toEqual([
        [400, 'ERR_LOCK_HTTP_MISSING_VALUE'],
        [400, 'ERR_LOCK_HTTP_MISSING_VALUE'],
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
        [500, 'ERR_LOCK_HTTP_MISSING_PARAM'],
      ]);
      expect(acquires).toHaveLength(0);
      // The route is matched: the warning about a middleware mounted before routing would mislead.
      expect(logger.warn.mock.calls.map(([warning]) => warning.code)).not.toContain(
        'ERR_LOCK_HTTP_NO_PARAMS',
      );
      const given = await request(server).get('/orders/7');
      expect([given.status, given.body]).toEqual([200, { key: 'order:7' }]);
      expect(acquires.map((a) => a.key)).toEqual(['order:7']);
    });

    it('passes a failing key function or skip to the error handling', async () => {
      const teapot = () => Object.assign(new Error('no key today'), { status: 418, code: 'E_KEY' });
      const server = await serve(
        {
          path: '/key',
          options: {
            locker,
            key: async () => {
              throw teapot();
            },
          },
          handle: async () => ({ ok: true }),
        },
        {
          path: '/skip',
          options: {
            locker,
            key: 'k',
            skip: async () => {
              throw teapot();
            },
          },
          handle: async () => ({ ok: true }),
        },
        { path: '/empty', options: { locker, key: () => '' }, handle: async () => ({ ok: true }) },
      );
      expect((await request(server).get('/key')).body).toEqual({ code: 'E_KEY' });
      expect((await request(server).get('/skip')).status).toBe(418);
      const empty = await request(server).get('/empty');
      expect([empty.status, empty.body]).toEqual([500, { code: 'ERR_LOCK_HTTP_BAD_KEY' }]);
      expect(acquires).toHaveLength(0);
    });

    it('skips the lock when skip says so, and answers busy with the configured status', async () => {
      const inside = new Gate();
      const server = await serve({
        path: '/orders/:id',
        options: {
          locker,
          key: 'order:{params.id}',
          wait: 0,
          statusCode: 423,
          message: 'Order 6 is being paid',
          skip: (context: { query: Record<string, unknown> }) => context.query.peek === '1',
        },
        handle: async (lock) => {
          if (lock) await inside.pass();
          return { locked: lock !== undefined };
        },
      });
      const holding = request(server)
        .get('/orders/6')
        .then((r) => r);
      await waitFor('the first request to hold the lock', () => locker.isLocked('order:6'), bound);
      const busy = await request(server).get('/orders/6');
      const peek = await request(server).get('/orders/6?peek=1');
      inside.open();
      expect((await holding).body).toEqual({ locked: true });
      expect([busy.status, JSON.parse(busy.text).status, JSON.parse(busy.text).detail]).toEqual([
        423,
        423,
        'Order 6 is being paid',
      ]);
      expect(peek.body).toEqual({ locked: false });
    });

    it('locks with the options as they were when it was made, whatever the caller changes in them after', async () => {
      const inside = new Gate();
      const options: Record<string, unknown> = {
        locker,
        key: 'order:{params.id}',
        ttl: 5_000,
        wait: 0,
        statusCode: 423,
        message: 'Order 8 is being paid',
        skip: () => false,
      };
      const server = await serve({
        path: '/orders/:id',
        options,
        handle: async (lock) => {
          if (lock) await inside.pass();
          return { locked: lock !== undefined };
        },
      });
      // Each change, read at request time, would show: another key, a longer lease, a wait for
      // the holder instead of an answer, another answer, or no lock at all.
      Object.assign(options, {
        key: 'changed:{params.id}',
        ttl: 60_000,
        wait: 10_000,
        statusCode: 409,
        message: 'changed',
        skip: () => true,
      });
      const holding = request(server)
        .get('/orders/8')
        .then((r) => r);
      await waitFor('the first request to hold order:8', () => locker.isLocked('order:8'), bound);
      const { ttl } = await locker.inspect('order:8');
      const busy = await request(server).get('/orders/8');
      inside.open();
      expect((await holding).body).toEqual({ locked: true });
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(5_000);
      expect([busy.status, JSON.parse(busy.text).detail]).toEqual([423, 'Order 8 is being paid']);
      expect(acquires.map((a) => a.key)).toEqual(['order:8', 'order:8']);
    });

    it('refuses a bad template, option or status when the middleware is made', () => {
      expect(() => adapter.lock({ locker, key: 'order:{nope.id}' })).toThrow(
        expect.objectContaining({ code: 'ERR_LOCK_HTTP_KEY_TEMPLATE', name: 'KeyTemplateError' }),
      );
      expect(() => adapter.lock({ locker, key: '' })).toThrow(
        expect.objectContaining({ code: 'ERR_LOCK_HTTP_KEY_TEMPLATE' }),
      );
      expect(() => adapter.lock({ locker, key: 'k', statusCode: 429 })).toThrow(
        expect.objectContaining({ code: 'ERR_LOCK_INVALID_OPTION', option: 'statusCode', value: 429 }),
      );
      expect(() => adapter.lock({ locker, key: 'k', wiat: 0 })).toThrow(
        expect.objectContaining({ code: 'ERR_LOCK_INVALID_OPTION', option: 'wiat' }),
      );
      expect(() => adapter.lock({ key: 'k' })).toThrow(expect.objectContaining({ option: 'locker' }));
    });

    it('refuses an unknown option by name without showing or keeping its value, with the name it likely stands for', async () => {
      const secret = 'hunter2-not-to-be-logged';
      const refusal = (options: Record<string, unknown>) =>
        refusalHiding(secret, () => adapter.lock({ locker, key: 'k', ...options }));
      const typo = await refusal({ faillOpen: secret });
      expect(typo).toMatchObject({ code: 'ERR_LOCK_INVALID_OPTION', option: 'faillOpen', value: undefined });
      expect(typo.message).toMatch(
        /^unknown option "faillOpen" \(expected one of the lock\(\) options: locker, key, ttl, .*\)\. Did you mean "failOpen"\?$/,
      );
      const nested = await refusal({ validate: { bdy: secret } });
      expect(nested).toMatchObject({ option: 'validate.bdy' });
      expect(nested.message).toBe(
        'unknown option "validate.bdy" (expected one of the validate options: params, body). Did you mean "validate.body"?',
      );
      expect((await refusal({ password: secret })).message).not.toContain('Did you mean');
    });

    it('logs a lock lost before its response closed as lost, and answers the request when the logger told of it throws', async () => {
      const error = vi.fn((_warning: unknown) => {
        throw new Error('logger transport down');
      });
      const server = await serve({
        path: '/orders/:id',
        // A fixed lease shorter than the handler: the lock is lost while the handler runs.
        options: { locker, key: 'order:{params.id}', ttl: 100, logger: { warn: vi.fn(), error } },
        handle: async (lock) => {
          await waitFor('the lease to end', async () => lock?.signal.aborted === true, bound);
          return { ok: true };
        },
      });
      const response = await request(server).get('/orders/7');
      expect(response.status).toBe(200);
      await waitFor('the loss to be logged', async () => error.mock.calls.length === 1, bound);
      expect(error.mock.calls[0]![0]).toMatchObject({
        code: 'ERR_LOCK_HTTP_RELEASE',
        message:
          'the lock "order:7" of a response was lost before the response was over: its lease ran out unrenewed (a fixed ttl shorter than the request, or a stalled process); other requests for the key were not kept out from then on',
        cause: expect.objectContaining({ code: 'ERR_LOCK_LOST', reason: 'expired' }),
      });
    });

    it('logs one ERR_LOCK_HTTP_RELEASE when its release finds the lock taken, and leaves the new holder its lock', async () => {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const admin = redisServer.client();
      let taker: Lock | undefined;
      const server = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', logger },
        handle: async () => {
          // Deleted behind the holder's back (an operator, an eviction) and taken by another
          // owner before the response closes: only the release can find out.
          await admin.del('{lock:order:13}');
          taker = await locker.acquire('order:13', { reentrant: false, wait: 0 });
          return { ok: true };
        },
      });
      const response = await request(server).get('/orders/13');
      expect([response.status, response.body]).toEqual([200, { ok: true }]);
      await waitFor('the loss to be logged', async () => logger.error.mock.calls.length > 0, bound);
      // One more turn lets a duplicate show.
      await new Promise((resolve) => setImmediate(resolve));
      expect(logger.error).toHaveBeenCalledTimes(1);
      expect(logger.error.mock.calls[0]![0]).toMatchObject({
        code: 'ERR_LOCK_HTTP_RELEASE',
        // Not "ends by its lease": the key is another owner's now.
        message:
          'the lock "order:13" of a response was lost before the response was over: the key was deleted, or taken by another owner, while it was held; other requests for the key were not kept out from then on',
        cause: expect.objectContaining({ code: 'ERR_LOCK_LOST', key: 'order:13' }),
      });
      expect((await locker.inspect('order:13')).held).toBe(true);
      await taker?.release();
    });

    it('answers, and leaves no unhandled rejection, when an async logger told of a loss rejects', async () => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        // Not a vi.fn: a spy handles the promises its function returns, to record how they settle.
        let told = 0;
        const error = async () => {
          told += 1;
          throw new Error('logger transport down');
        };
        const admin = redisServer.client();
        const server = await serve({
          path: '/orders/:id',
          options: { locker, key: 'order:{params.id}', logger: { warn: vi.fn(), error } },
          handle: async () => {
            // Deleted under the request: its release finds out, and the loss is told.
            await admin.del('{lock:order:14}');
            return { ok: true };
          },
        });
        const response = await request(server).get('/orders/14');
        expect([response.status, response.body]).toEqual([200, { ok: true }]);
        await waitFor('the loss to be told', async () => told === 1, bound);
        // Node reports a rejection nobody handled once the microtasks have run, before this turn.
        await new Promise((resolve) => setImmediate(resolve));
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });

    describe('when Redis stops', () => {
      async function downRedis() {
        const server = await useRedis();
        const redis = new Redis(server.url);
        // A real app listens for connection errors; without it ioredis prints each reconnect attempt.
        redis.on('error', () => {});
        const downLocker = createLocker({ redis });
        const warn = vi.fn();
        const logger = { warn, error: vi.fn() };
        const throwingWarn = vi.fn(() => {
          throw new Error('logger transport down');
        });
        const app = await serve(
          {
            path: '/closed/:id',
            options: { locker: downLocker, key: 'order:{params.id}', wait: 1_000, logger },
            handle: async (lock) => ({ locked: lock !== undefined }),
          },
          {
            path: '/open/:id',
            options: { locker: downLocker, key: 'order:{params.id}', wait: 1_000, failOpen: true, logger },
            handle: async (lock) => ({ locked: lock !== undefined }),
          },
          {
            path: '/open-unlogged/:id',
            options: {
              locker: downLocker,
              key: 'order:{params.id}',
              wait: 1_000,
              failOpen: true,
              logger: { warn: throwingWarn, error: vi.fn() },
            },
            handle: async (lock) => ({ locked: lock !== undefined }),
          },
        );
        expect((await request(app).get('/closed/1')).body).toEqual({ locked: true });
        await server.kill();
        return {
          app,
          warn,
          throwingWarn,
          [Symbol.asyncDispose]: async () => {
            redis.disconnect();
            await downLocker.close();
          },
        };
      }

      it('answers 503 with Retry-After within about the wait (fail closed)', async () => {
        await using down = await downRedis();
        const started = performance.now();
        const response = await request(down.app).get('/closed/1');
        expect(performance.now() - started).toBeLessThan(1_000 + 3_000);
        expect(response.status).toBe(503);
        expect(response.headers['retry-after']).toBe('1');
        expect(response.headers['content-type']).toBe('application/problem+json');
        expect(JSON.parse(response.text)).toMatchObject({
          type: 'urn:lock:problem:unavailable',
          status: 503,
          code: 'ERR_LOCK_UNAVAILABLE',
        });
      }, 15_000);

      it('answers 503 when no replica confirmed the lock in time (the lock was given back)', async () => {
        await using master = await startRedis();
        await using replica = await startRedis({ config: { replicaof: `${master.host} ${master.port}` } });
        const redis = master.client();
        await waitFor('the replica online', async () =>
          (await redis.info('replication')).includes('state=online'),
        );
        const replicated = createLocker({ redis, replication: { replicas: 1, timeout: 100 } });
        const app = await serve({
          path: '/orders/:id',
          options: { locker: replicated, key: 'order:{params.id}', wait: 0 },
          handle: async () => ({ ran: true }),
        });
        replica.pause();
        try {
          const response = await request(app).get('/orders/1');
          expect([response.status, response.headers['retry-after'], JSON.parse(response.text).code]).toEqual([
            503,
            '1',
            'ERR_LOCK_UNAVAILABLE',
          ]);
        } finally {
          replica.resume();
          await replicated.close();
        }
      }, 15_000);

      it('answers, and logs one ERR_LOCK_HTTP_RELEASE naming the key, when the release cannot reach Redis', async () => {
        const frozen = await useRedis();
        const redis = frozen.client();
        // A short round trip: each release attempt gives up soon on the frozen server.
        const frozenLocker = createLocker({ redis, commandTimeout: 100 });
        const logger = { warn: vi.fn(), error: vi.fn() };
        const app = await serve({
          path: '/orders/:id',
          options: { locker: frozenLocker, key: 'order:{params.id}', logger },
          handle: async () => {
            // The work is done under the lock; Redis freezes before the release.
            frozen.pause();
            return { ok: true };
          },
        });
        // Both release attempts (using's own, then the middleware's) report their outcome here.
        const releases: unknown[] = [];
        const onRelease = (message: unknown) => {
          if ((message as { key: string }).key === 'order:5')
            releases.push((message as { result: unknown }).result);
        };
        subscribe('lock:release', onRelease);
        try {
          const response = await request(app).get('/orders/5');
          expect([response.status, response.body]).toEqual([200, { ok: true }]);
          await waitFor('both release attempts to fail', async () => releases.length === 2, bound);
          // The log follows the second failure in the same turn; one more turn lets a duplicate show.
          await new Promise((resolve) => setImmediate(resolve));
          expect(releases).toEqual(['error', 'error']);
          expect(logger.error).toHaveBeenCalledTimes(1);
          expect(logger.error.mock.calls[0]![0]).toMatchObject({
            code: 'ERR_LOCK_HTTP_RELEASE',
            message:
              'releasing the lock "order:5" of a response failed; the key stays locked until its lease ends',
            cause: expect.objectContaining({
              code: 'ERR_LOCK_UNAVAILABLE',
              key: 'order:5',
              operation: 'release',
            }),
          });
        } finally {
          unsubscribe('lock:release', onRelease);
          frozen.resume();
          await frozenLocker.close();
        }
      }, 15_000);

      it('runs the handler unlocked with failOpen, warning once', async () => {
        await using down = await downRedis();
        const first = await request(down.app).get('/open/1');
        const second = await request(down.app).get('/open/2');
        expect([first.status, first.body, second.body]).toEqual([200, { locked: false }, { locked: false }]);
        expect(down.warn).toHaveBeenCalledTimes(1);
        expect(down.warn.mock.calls[0]![0]).toMatchObject({ code: 'ERR_LOCK_HTTP_FAIL_OPEN' });
      }, 15_000);

      it('runs the handler unlocked with failOpen when the logger told of the outage throws', async () => {
        await using down = await downRedis();
        const first = await request(down.app).get('/open-unlogged/1');
        expect([first.status, first.body]).toEqual([200, { locked: false }]);
        expect(down.throwingWarn).toHaveBeenCalledTimes(1);
      }, 15_000);
    });
  });
}
