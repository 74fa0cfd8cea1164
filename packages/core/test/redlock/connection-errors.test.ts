import { inspect } from 'node:util';
import { freePort, type RedisMasters, startMasters, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedlock, InvalidOptionError, LockUnavailableError, QuorumError } from '../../src/index.js';
import { connectRefused } from '../support/connect-refused.js';
import { thrown } from '../support/settle.js';

const NODE_TIMEOUT = 200;

/** Clients made here, disconnected after each test (the masters' own are disconnected by `stop()`). */
const made: Redis[] = [];
afterEach(() => {
  for (const client of made.splice(0)) client.disconnect();
});

/** A client as a user makes one (offline queue, reconnecting), listening to its own errors. */
function userClient(port: number, options: { password?: string; retryStrategy?: () => number } = {}): Redis {
  const redis = new Redis({ host: '127.0.0.1', port, ...options });
  redis.on('error', () => {});
  made.push(redis);
  return redis;
}

/** What a RedLock error says of masters `down` (client index and port), each refused its connect. */
function refusedMasters(down: readonly (readonly [index: number, port: number])[]) {
  const named = down.map(([index, port]) => `clients[${index}]: connect ECONNREFUSED 127.0.0.1:${port}`);
  return {
    message: endingWith(` (last connection error: ${named.join('; ')})`),
    connectionError: expect.objectContaining({
      name: 'UnreachableMastersError',
      masters: down.map(([index]) => index),
      errors: down.map(([, port]) => expect.objectContaining({ code: 'ECONNREFUSED', port })),
    }),
  };
}

/** A message that ends with `text`, taken as it is written. */
function endingWith(text: string) {
  return expect.stringMatching(new RegExp(`${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
}

/** Every event each client is listened to for, with how many listeners. */
function listenersOn(clients: readonly Redis[]): Record<string, number>[] {
  return clients.map((client) =>
    Object.fromEntries(client.eventNames().map((name) => [String(name), client.listenerCount(name)])),
  );
}

describe('RedLock names the last connection error of each master it could not reach', () => {
  it('masters killed under a held lock: acquire, inspect, extend and release say why each is down', async () => {
    await using masters: RedisMasters = await startMasters(3);
    const clients = masters.servers.map((server) => userClient(server.port));
    const locker = createRedlock({ clients, nodeTimeout: NODE_TIMEOUT, prefix: 'app:' });
    const held = await locker.acquire('held', { ttl: 10_000 });
    const killed = masters.servers.slice(1);
    const refusedNow = clients.slice(1).map(connectRefused);
    await Promise.all(killed.map((server) => server.kill()));
    await Promise.all(refusedNow);
    const down = killed.map((server, n) => [n + 1, server.port] as const);

    const tried = await thrown(locker.acquire('orders:1', { wait: 0 }));
    expect(tried).toBeInstanceOf(QuorumError);
    expect(tried).toMatchObject({ key: 'orders:1', timedOut: 2, ...refusedMasters(down) });
    // A waiting acquire ends with the last attempt's error.
    expect(await thrown(locker.acquire('orders:1', { wait: 300 }))).toMatchObject(refusedMasters(down));
    expect(await thrown(locker.inspect('orders:1'))).toMatchObject(refusedMasters(down));
    const extended = await thrown(held.extend());
    expect(extended).toBeInstanceOf(QuorumError);
    expect(extended).toMatchObject({ key: 'held', ...refusedMasters(down) });
    const released = await thrown(held.release());
    expect(released).toBeInstanceOf(QuorumError);
    expect(released).toMatchObject({ key: 'held', ...refusedMasters(down) });
    await locker.close();
  });

  it('clients of ports nobody listens on: only those masters are named, the one that answered is not', async () => {
    await using server = await startRedis();
    const ports = [await freePort(), await freePort()];
    const clients = [userClient(server.port), ...ports.map((port) => userClient(port))];
    // Made before the clients fail: an error from before it listened is not known to it.
    const locker = createRedlock({ clients, nodeTimeout: NODE_TIMEOUT });
    await Promise.all(clients.slice(1).map(connectRefused));
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    expect(error).toMatchObject({
      code: 'ERR_LOCK_QUORUM',
      agreed: 1,
      ...refusedMasters([
        [1, ports[0]!],
        [2, ports[1]!],
      ]),
    });
    await locker.close();
  });

  it("the engine's own deadline: LockUnavailableError names the masters whose connection is down", async () => {
    await using server = await startRedis();
    const port = await freePort();
    const clients = [userClient(server.port), userClient(port), userClient(await freePort())];
    // The call is given up on before its masters' own timeout.
    const locker = createRedlock({ clients, nodeTimeout: 2_000, commandTimeout: 100 });
    await Promise.all(clients.slice(1).map(connectRefused));
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).not.toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({
      code: 'ERR_LOCK_UNAVAILABLE',
      cause: expect.objectContaining({ name: 'CommandTimeoutError' }),
      connectionError: expect.objectContaining({ masters: [1, 2] }),
    });
    expect((error as Error).message).toMatch(
      `(last connection error: clients[1]: connect ECONNREFUSED 127.0.0.1:${port}; clients[2]: `,
    );
    await locker.close();
  });

  it('a master refusing the login: WRONGPASS named, the password nowhere in the error', async () => {
    await using live = await startRedis();
    await using guarded = await startRedis({ config: { requirepass: 'right-password' } });
    // Refused, ioredis tries again long after the call below gave up.
    const refusing = userClient(guarded.port, { password: 'wrong-password', retryStrategy: () => 60_000 });
    const reconnecting = new Promise((resolve) => refusing.once('reconnecting', resolve));
    const port = await freePort();
    const clients = [userClient(live.port), refusing, userClient(port)];
    const locker = createRedlock({ clients, nodeTimeout: NODE_TIMEOUT });
    await Promise.all([reconnecting, connectRefused(clients[2]!)]);
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    expect(error).toMatchObject({
      message: endingWith(
        `(last connection error: clients[1]: WRONGPASS invalid username-password pair or user is disabled.; clients[2]: connect ECONNREFUSED 127.0.0.1:${port})`,
      ),
      connectionError: expect.objectContaining({
        masters: [1, 2],
        errors: [
          expect.objectContaining({ name: 'ReplyError' }),
          expect.objectContaining({ code: 'ECONNREFUSED' }),
        ],
      }),
    });
    // ioredis attaches the login command, the password among its arguments, to its reply.
    expect(inspect(error, { depth: 10, showHidden: true })).not.toContain('wrong-password');
    expect(JSON.stringify((error as LockUnavailableError).connectionError)).not.toContain('wrong-password');
    await locker.close();
  });

  it("a refused or closed RedLock leaves each client's listeners as they were", async () => {
    await using masters = await startMasters(3);
    const clients = masters.clients();
    await Promise.all(clients.map((client) => client.ping()));
    const before = listenersOn(clients);
    expect(() => createRedlock({ clients, ttl: -1 })).toThrow(InvalidOptionError);
    expect(listenersOn(clients)).toEqual(before);
    const first = createRedlock({ clients });
    const open = listenersOn(clients);
    const second = createRedlock({ clients: [...clients].reverse() });
    await (await second.acquire('listened', { ttl: 5_000 })).release();
    // One listener per client, whatever the number of lockers on it.
    expect(listenersOn(clients)).toEqual(open);
    await first.close();
    await second.close();
    expect(listenersOn(clients)).toEqual(before);
  });
});
