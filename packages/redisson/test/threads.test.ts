import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NotOwnerError } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRedisson, NoThreadError, type Redisson } from '../src/index.js';

/** A promise and the function that settles it. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/**
 * Issue 15 item 3: two concurrent HTTP requests of one process, each in the async context the
 * HTTP server gives it. Request B's unlock must never release the lock request A holds.
 */
describe('threads across concurrent requests', () => {
  let server: RedisServer;
  let redis: Redis;
  let redisson: Redisson;
  let http: Server;
  let base: string;
  /** The route handlers of the current test. */
  let routes: Record<string, () => Promise<string>> = {};

  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
    redisson = createRedisson({ redis });
    http = createServer((req, res) => {
      const route = routes[req.url ?? ''];
      if (!route) {
        res.writeHead(404).end();
        return;
      }
      route().then(
        (body) => res.end(body),
        (error: unknown) => res.writeHead(409).end((error as Error).name),
      );
    });
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    http.close();
    await redisson.shutdown();
    await server.stop();
  });
  beforeEach(async () => {
    await redis.flushall();
    routes = {};
  });

  const get = async (path: string) => {
    const response = await fetch(base + path);
    return `${response.status} ${await response.text()}`;
  };

  it("the plain Java shape in a handler is refused before writing, so B's unlock cannot release A's hold", async () => {
    const lock = redisson.getLock('orders:1');
    const attempted = latch();
    const finish = latch();
    routes['/a'] = async () => {
      try {
        await lock.lock();
      } finally {
        attempted.open();
      }
      await finish.promise;
      await lock.unlock();
      return 'done';
    };
    routes['/b'] = async () => {
      await lock.unlock();
      return 'released';
    };
    const a = get('/a');
    await attempted.promise;
    const b = await get('/b');
    const heldAfterB = await redis.exists('orders:1');
    finish.open();
    expect(b).toBe('409 NoThreadError');
    expect(await a).toBe('409 NoThreadError');
    expect(heldAfterB).toBe(0);
  });

  it("with one redisson.run per request, B's unlock is refused and A keeps its hold until it unlocks", async () => {
    const lock = redisson.getLock('orders:2');
    const held = latch();
    const finish = latch();
    routes['/a'] = () =>
      redisson.run(async () => {
        await lock.lock();
        held.open();
        await finish.promise;
        const count = await lock.getHoldCount();
        await lock.unlock();
        return `held ${count}`;
      });
    routes['/b'] = () =>
      redisson.run(async () => {
        await lock.unlock();
        return 'released';
      });
    routes['/b-unchained'] = async () => {
      await lock.unlock();
      return 'released';
    };
    const a = get('/a');
    await held.promise;
    const [owner] = Object.keys(await redis.hgetall('orders:2'));
    expect(await get('/b')).toBe(`409 ${new NotOwnerError('', '').name}`);
    expect(await get('/b-unchained')).toBe(`409 ${new NoThreadError('', '').name}`);
    expect(Object.keys(await redis.hgetall('orders:2'))).toEqual([owner]);
    finish.open();
    expect(await a).toBe('200 held 1');
    expect(await redis.exists('orders:2')).toBe(0);
  });

  it('two runs started together are two threads: the second waits for the first instead of re-entering', async () => {
    const lock = redisson.getLock('orders:3');
    const inside: string[] = [];
    let overlaps = 0;
    const task = (name: string) =>
      redisson.run(async () => {
        await lock.lock();
        inside.push(name);
        if (inside.length > 1) overlaps += 1;
        await new Promise((resolve) => setImmediate(resolve));
        inside.splice(inside.indexOf(name), 1);
        await lock.unlock();
      });
    await redisson.run(() => Promise.all([task('first'), task('second'), task('third')]));
    expect(overlaps).toBe(0);
  });
});
