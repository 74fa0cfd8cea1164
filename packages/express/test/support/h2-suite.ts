import { once } from 'node:events';
import http2, { type ClientHttp2Session } from 'node:http2';
import { createLocker, type Lock, type Locker } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import { useRedis } from '@lock/testing/vitest';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  closeH2,
  type H2Listener,
  type H2Server,
  type H2Transport,
  h2c,
  h2Get,
  h2OverTls,
  listenH2,
} from './h2.js';
import type { TestRoute } from './lock-suite.js';
import { expectRetryAfterFromLease, Gate, Intervals, observed, within } from './recorder.js';

/** A route of the shared suite, which a middleware before `lock()` may answer the headers of first. */
export interface H2Route extends TestRoute {
  /** Whether a middleware before `lock()` sends the headers (a 200) first. */
  readonly flushHeaders?: boolean;
}

/** What the HTTP/2 suite needs from one framework version. */
export interface H2LockAdapter {
  readonly name: string;
  /**
   * The compat request listener of an app serving `routes` behind `lock()`, whose error handling
   * answers an error with its `status` (500 without one) and the body `{ code }`. It returns a
   * promise that settles once the app is done with the request, as Koa's `callback()` does.
   */
  listener(routes: readonly H2Route[]): H2Listener;
}

/** A request the server was given: its response's 'close', and the app done with it. */
interface Served {
  readonly closed: Promise<'closed'>;
  readonly done: Promise<'done'>;
}

const bound = { timeout: 5_000, interval: 10 };
const { NGHTTP2_CANCEL, NGHTTP2_INTERNAL_ERROR } = http2.constants;

const problem = (code: string, status: number) => ({
  type: code === 'ERR_LOCK_BUSY' ? 'urn:lock:problem:busy' : 'urn:lock:problem:unavailable',
  title: expect.any(String),
  status,
  detail: expect.any(String),
  code,
});

/** The lock middleware on node:http2's compatibility API, over h2c and over TLS. */
export function describeH2LockMiddleware(adapter: H2LockAdapter): void {
  for (const transport of [h2c, h2OverTls()]) describeOver(adapter, transport);
}

function describeOver(adapter: H2LockAdapter, transport: H2Transport): void {
  describe(`${adapter.name} over ${transport.name}`, () => {
    let redisServer: RedisServer;
    let locker: Locker;
    let acquires: ReturnType<typeof observed>['acquires'];
    let servers: H2Server[] = [];
    let sessions: ClientHttp2Session[] = [];

    beforeAll(async () => {
      redisServer = await startRedis();
      ({ locker, acquires } = observed(createLocker({ redis: redisServer.client() })));
    });
    afterAll(async () => {
      await locker.close();
      await redisServer.stop();
    });
    afterEach(async () => {
      for (const session of sessions) session.destroy();
      await Promise.all(servers.map(closeH2));
      servers = [];
      sessions = [];
      acquires.length = 0;
      await redisServer.client().flushall();
    });

    /** A listening server for `routes`, the responses it was given in order, and a client session. */
    async function serve(...routes: H2Route[]) {
      const served: Served[] = [];
      const listener = adapter.listener(routes);
      const server = await listenH2(
        transport.createServer((req, res) => {
          const closed = once(res, 'close').then(() => 'closed' as const);
          served.push({ closed, done: Promise.resolve(listener(req, res)).then(() => 'done' as const) });
        }),
      );
      servers.push(server);
      const session = transport.connect(server);
      sessions.push(session);
      return { served, session };
    }

    const freed = (key: string) =>
      waitFor(`${key} to be free`, async () => !(await locker.isLocked(key)), bound);

    it('takes the lock for each stream and releases it when its response ends: the streams of one session for one key run one at a time', async () => {
      const intervals = new Intervals();
      const { session } = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 20_000 },
        handle: (lock) =>
          intervals.record(async () => ({ key: lock?.key, held: await locker.isLocked('order:1') })),
      });
      const answers = await Promise.all(Array.from({ length: 5 }, () => h2Get(session, '/orders/1').answer));
      expect(answers.map((a) => [a.status, JSON.parse(a.body), a.rstCode])).toEqual(
        Array(5).fill([200, { key: 'order:1', held: true }, 0]),
      );
      expect(intervals.overlapping()).toBe(0);
      await freed('order:1');
    });

    it('keeps the lock of a stream the client resets mid-handler until the handler settled, then releases it', async () => {
      const entered = new Gate();
      const leave = new Gate();
      let handle: Lock | undefined;
      const { served, session } = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 0 },
        handle: async (lock) => {
          handle ??= lock;
          entered.open();
          await leave.pass();
          return { ok: true };
        },
      });
      const reset = h2Get(session, '/orders/2');
      await entered.pass();
      reset.cancel();
      expect((await reset.answer).rstCode).toBe(NGHTTP2_CANCEL);
      expect(await within(served[0]!.closed)).toBe('closed');
      // The handler still runs: nobody else may enter, and the handle says it still holds.
      const meanwhile = await h2Get(session, '/orders/2').answer;
      expect([meanwhile.status, handle?.released, handle?.signal.aborted]).toEqual([409, false, false]);
      leave.open();
      await freed('order:2');
      expect((await h2Get(session, '/orders/2').answer).status).toBe(200);
    });

    it('stops waiting when the client cancels its stream: the handler never runs and nothing stays locked', async () => {
      let ran = 0;
      const { session } = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 20_000 },
        handle: async () => {
          ran += 1;
          return { ok: true };
        },
      });
      const holder = await locker.acquire('order:3');
      const waiting = h2Get(session, '/orders/3');
      await waitFor('the stream to wait for the lock', async () => acquires.length === 2, bound);
      waiting.cancel();
      expect(await within(acquires[1]!.result)).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
      await holder.release();
      await freed('order:3');
      expect(ran).toBe(0);
      expect((await h2Get(session, '/orders/3').answer).status).toBe(200);
      await freed('order:3');
    });

    it('ends every stream of a destroyed session: waiters stop waiting, holders release once their handlers settled', async () => {
      const leave = new Gate();
      let entered = 0;
      const { served, session } = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 20_000 },
        handle: async () => {
          entered += 1;
          await leave.pass();
          return { ok: true };
        },
      });
      const streams = ['/orders/4', '/orders/5', '/orders/4'].map((path) => h2Get(session, path));
      await waitFor(
        'two handlers inside and a third stream waiting',
        async () => entered === 2 && acquires.length === 3,
        bound,
      );
      session.destroy();
      await Promise.all(streams.map((stream) => stream.answer));
      expect(await within(acquires[2]!.result)).toMatchObject({ name: 'AbortError' });
      expect(await within(Promise.all(served.map((each) => each.closed)))).toEqual(Array(3).fill('closed'));
      expect([await locker.isLocked('order:4'), await locker.isLocked('order:5')]).toEqual([true, true]);
      leave.open();
      await freed('order:4');
      await freed('order:5');
      expect(entered).toBe(2);
    });

    it('answers busy with the status, Retry-After, problem+json and a whole body', async () => {
      const { session } = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 0 },
        handle: async () => ({ ok: true }),
      });
      const holder = await locker.acquire('order:6', { ttl: 10_000 });
      const busy = await h2Get(session, '/orders/6').answer;
      const { ttl: left } = await locker.inspect('order:6');
      await holder.release();
      expect(busy).toMatchObject({
        status: 409,
        headers: {
          'retry-after': expect.stringMatching(/^\d+$/),
          'content-type': 'application/problem+json',
        },
        rstCode: 0,
      });
      expectRetryAfterFromLease(Number(busy.headers['retry-after']), left);
      expect(JSON.parse(busy.body)).toEqual(problem('ERR_LOCK_BUSY', 409));
    });

    it('answers 503 with Retry-After and problem+json when Redis is unavailable', async () => {
      const down = await useRedis();
      const redis = new Redis(down.url);
      // A real app listens for connection errors; without it ioredis prints each reconnect attempt.
      redis.on('error', () => {});
      const downLocker = createLocker({ redis });
      try {
        const { session } = await serve({
          path: '/orders/:id',
          options: { locker: downLocker, key: 'order:{params.id}', wait: 1_000 },
          handle: async () => ({ ok: true }),
        });
        await down.kill();
        const unavailable = await h2Get(session, '/orders/7').answer;
        expect(unavailable).toMatchObject({
          status: 503,
          headers: { 'retry-after': '1', 'content-type': 'application/problem+json' },
          rstCode: 0,
        });
        expect(JSON.parse(unavailable.body)).toEqual(problem('ERR_LOCK_UNAVAILABLE', 503));
      } finally {
        redis.disconnect();
        await downLocker.close();
      }
    }, 15_000);

    it('resets a refused stream whose headers an earlier middleware sent with an error code, so it does not pass for that status', async () => {
      const { session } = await serve({
        path: '/orders/:id',
        options: { locker, key: 'order:{params.id}', wait: 0 },
        flushHeaders: true,
        handle: async () => ({ ok: true }),
      });
      const holder = await locker.acquire('order:8', { ttl: 5_000 });
      const refused = await h2Get(session, '/orders/8').answer;
      await holder.release();
      // NO_ERROR would read as the end of a 200 with an empty body.
      expect([refused.status, refused.body, refused.rstCode]).toEqual([200, '', NGHTTP2_INTERNAL_ERROR]);
    });

    it('takes no lock for a stream reset before lock() ran', async () => {
      const skipping = new Gate();
      const skipped = new Gate();
      let ran = 0;
      const { served, session } = await serve({
        path: '/orders/:id',
        options: {
          locker,
          key: 'order:{params.id}',
          skip: async () => {
            skipping.open();
            await skipped.pass();
            return false;
          },
        },
        handle: async () => {
          ran += 1;
          return { ok: true };
        },
      });
      const reset = h2Get(session, '/orders/9');
      await skipping.pass();
      reset.cancel();
      expect(await within(served[0]!.closed)).toBe('closed');
      skipped.open();
      expect(await within(served[0]!.done)).toBe('done');
      expect([acquires.length, ran, await locker.isLocked('order:9')]).toEqual([0, 0, false]);
    });
  });
}
