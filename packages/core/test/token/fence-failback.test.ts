import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { createLocker } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

const EPOCH = 2 ** 32;
const COUNTER = '{lock:#}:fences';

/** One client address in front of whichever server the test points it at; a switch drops every connection. */
async function switchableProxy(initial: RedisServer) {
  let target = initial;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return {
    port,
    /** Points the address at `next`; resolves once `redis` reconnected through it. */
    async switchTo(next: RedisServer, redis: Redis): Promise<void> {
      const ready = once(redis, 'ready');
      target = next;
      for (const socket of sockets) socket.destroy();
      await ready;
    },
    async [Symbol.asyncDispose](): Promise<void> {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Acquires and releases `key` `times` times; the fences drawn. */
async function draw(locker: ReturnType<typeof createLocker>, key: string, times: number): Promise<number[]> {
  const fences: number[] = [];
  for (let i = 0; i < times; i++) {
    const lock = await locker.acquire(key, { ttl: 10_000, wait: 5_000 });
    fences.push(lock.fence);
    await lock.release();
  }
  return fences;
}

describe('fences after a master lost writes', () => {
  for (const protocol of ['token', 'legacy'] as const) {
    it(`${protocol}: A -> B -> A, B's increments never reaching A: fences strictly increase across the three terms`, async () => {
      await using a = await startRedis();
      await using b = await startRedis();
      await using proxy = await switchableProxy(a);
      const redis = new Redis({ host: '127.0.0.1', port: proxy.port });
      const locker = createLocker({ redis, replication: false, protocol });
      try {
        const term1 = await draw(locker, 'order:1', 3);
        // B copies A (its stamp still names A), then is promoted.
        const replica = b.client();
        await replica.call('REPLICAOF', a.host, String(a.port));
        await waitFor('B in sync with A', async () => (await replica.get(COUNTER)) === String(term1.at(-1)));
        await replica.call('REPLICAOF', 'NO', 'ONE');
        await proxy.switchTo(b, redis);
        const term2 = await draw(locker, 'order:1', 3);
        // B hands out fences of its epoch, then goes away before they reach A: A is master again.
        expect(term2[0]).toBeGreaterThan(EPOCH);
        expect(await a.client().get(COUNTER)).toBe(String(term1.at(-1)));
        await proxy.switchTo(a, redis);
        const term3 = await draw(locker, 'order:1', 3);
        const fences = [...term1, ...term2, ...term3];
        for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
        // The next epoch above the highest fence B handed out.
        expect(term3[0]).toBe(2 * EPOCH + 1);
      } finally {
        await locker.close();
        redis.disconnect();
      }
    });
  }

  it('a restart without persistence: the counter comes back empty, the next fence is above every fence drawn before', async () => {
    await using server = await startRedis({ persistence: false });
    const locker = createLocker({ redis: server.client(), replication: false });
    const before = await draw(locker, 'order:1', 5);
    const held = await locker.acquire('order:2', { ttl: 60_000 });
    const lost = new Promise((resolve) => held.signal.addEventListener('abort', resolve, { once: true }));
    await server.restart();
    await lost;
    const after = await draw(locker, 'order:1', 2);
    expect(after[0]).toBeGreaterThan(Math.max(...before, held.fence));
    expect(after[1]).toBeGreaterThan(after[0]!);
    await locker.close();
  });

  it('a fresh server behind the same address: the next fence is above every fence drawn before', async () => {
    await using first = await startRedis();
    await using second = await startRedis();
    await using proxy = await switchableProxy(first);
    const redis = new Redis({ host: '127.0.0.1', port: proxy.port });
    const locker = createLocker({ redis, replication: false, protocol: 'legacy' });
    try {
      const before = await draw(locker, 'order:1', 4);
      await proxy.switchTo(second, redis);
      // A single stamp, taken before the first grant, raises the empty counter.
      const after = await draw(locker, 'order:1', 2);
      expect(after[0]).toBe(EPOCH + 1);
      expect(after[0]).toBeGreaterThan(Math.max(...before));
    } finally {
      await locker.close();
      redis.disconnect();
    }
  });
});

it('re-entering a lock an earlier version took (its fence in a per-key counter) is no lost write: a reconnect raises nothing and ends no lock', async () => {
  await using server = await startRedis();
  const redis = new Redis(server.redisOptions);
  const locker = createLocker({ redis, replication: false });
  try {
    const other = await locker.acquire('other', { ttl: 60_000 });
    // What an earlier version left: the hold without a '' fence field, its fence in `{key}:fence`.
    await redis.hset('{lock:k}', 'old-owner', 1);
    await redis.pexpire('{lock:k}', 60_000);
    await redis.set('{lock:k}:fence', 100);
    const reentered = await locker.acquire('k', { owner: 'old-owner', ttl: 60_000 });
    expect([reentered.fence, reentered.holds]).toEqual([100, 2]);
    // Same server, same run id, nothing lost: the restamp after it (the next acquisition waits
    // for it) must find nothing to raise.
    const reconnected = once(redis, 'ready');
    await server.client().call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await reconnected;
    const next = await locker.acquire('third', { ttl: 60_000 });
    expect(next.fence).toBeLessThan(EPOCH);
    expect([other.signal.aborted, reentered.signal.aborted]).toEqual([false, false]);
    await next.release();
  } finally {
    await locker.close();
    redis.disconnect();
  }
});
