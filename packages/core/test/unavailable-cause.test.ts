import { once } from 'node:events';
import { inspect } from 'node:util';
import { CommandTimeoutError, createLocker, LockUnavailableError } from '@lock/core';
import { freePort, startRedis } from '@lock/testing';
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectRefused } from './support/connect-refused.js';
import { thrown } from './support/settle.js';

const COMMAND_TIMEOUT = 200;

/** A client as a new user makes one (offline queue, reconnecting), listening to its own errors. */
function userClient(port: number): Redis {
  const redis = new Redis({ host: '127.0.0.1', port });
  redis.on('error', () => {});
  return redis;
}

/** The LockUnavailableError of a call that got no answer while the connection was refused. */
function refused(port: number, operation: string, key: string) {
  return {
    code: 'ERR_LOCK_UNAVAILABLE',
    key,
    operation,
    message: `Redis is unavailable: could not ${operation} lock "${key}" (last connection error: connect ECONNREFUSED 127.0.0.1:${port})`,
    // Still what the call failed with: the locker's own deadline, not ioredis, ended it.
    cause: expect.any(CommandTimeoutError),
    connectionError: expect.objectContaining({ code: 'ECONNREFUSED', port }),
  };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('LockUnavailableError names why the connection is down', () => {
  it('a server killed under a held lock: acquire, inspect, extend and release name ECONNREFUSED', async () => {
    await using server = await startRedis();
    const redis = userClient(server.port);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT, prefix: 'app:' });
    const held = await locker.acquire('held', { ttl: 10_000 });
    const refusedNow = connectRefused(redis);
    await server.kill();
    // The client has seen its reconnection refused before any call below gives up.
    await refusedNow;

    const acquire = await thrown(locker.acquire('orders:1', { wait: 300 }));
    expect(acquire).toBeInstanceOf(LockUnavailableError);
    expect(acquire).toMatchObject(refused(server.port, 'acquire', 'orders:1'));
    expect(await thrown(locker.acquire('orders:1', { wait: 0 }))).toMatchObject(
      refused(server.port, 'acquire', 'orders:1'),
    );
    expect(await thrown(locker.inspect('orders:1'))).toMatchObject(
      refused(server.port, 'inspect', 'orders:1'),
    );
    expect(await thrown(held.extend())).toMatchObject(refused(server.port, 'extend', 'held'));
    expect(await thrown(held.release())).toMatchObject(refused(server.port, 'release', 'held'));
    await locker.close();
    redis.disconnect();
  });

  it('a port nobody listens on: the first acquire names ECONNREFUSED', async () => {
    const port = await freePort();
    const redis = userClient(port);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    await connectRefused(redis);
    const error = await thrown(locker.acquire('orders:1', { wait: 300 }));
    expect(error).toMatchObject(refused(port, 'acquire', 'orders:1'));
    await locker.close();
    redis.disconnect();
  });

  it('a refused login: WRONGPASS, without the password', async () => {
    await using server = await startRedis({ config: { requirepass: 'right-password' } });
    // Refused, ioredis rejects the commands it holds and tries again: the next try, long after
    // the call below gave up, leaves the call to the deadline.
    const redis = new Redis({
      ...server.redisOptions,
      password: 'wrong-password',
      retryStrategy: () => 60_000,
    });
    redis.on('error', () => {});
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    // Not `once()`: it rejects on the 'error' event that comes first.
    await new Promise((resolve) => redis.once('reconnecting', resolve));
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    expect(error).toMatchObject({
      message:
        'Redis is unavailable: could not acquire lock "orders:1" (last connection error: WRONGPASS invalid username-password pair or user is disabled.)',
      cause: expect.objectContaining({ name: 'CommandTimeoutError' }),
      connectionError: expect.objectContaining({ name: 'ReplyError' }),
    });
    // ioredis attaches the login command to its reply, the password among its arguments.
    expect(inspect(error, { depth: 10, showHidden: true })).not.toContain('wrong-password');
    await locker.close();
    redis.disconnect();
  });

  // ioredis reports a sentinel's or a cluster node's refused connect as "Connection is closed."
  // (their own connections fail fast): the client's own summary is what there is to name.
  it('a cluster client refused its login: nothing reachable from the error holds the password', async () => {
    await using server = await startRedis({ config: { requirepass: 'right-password' } });
    const redis = new Cluster([{ host: '127.0.0.1', port: server.port }], {
      redisOptions: { password: 'secret-wrong-password' },
      clusterRetryStrategy: () => 60_000,
    });
    redis.on('error', () => {});
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    await once(redis, 'error');
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    // The node's refused login, kept by the client's summary, carried the AUTH command.
    expect(error).toMatchObject({
      connectionError: expect.objectContaining({
        name: 'ClusterAllFailedError',
        lastNodeError: expect.objectContaining({
          name: 'ReplyError',
          message: expect.stringMatching(/^WRONGPASS /),
        }),
      }),
    });
    expect(inspect(error, { depth: 10, showHidden: true })).not.toContain('secret-wrong-password');
    expect(JSON.stringify(error)).not.toContain('secret-wrong-password');
    expect(JSON.stringify((error as LockUnavailableError).connectionError)).not.toContain(
      'secret-wrong-password',
    );
    await locker.close();
    redis.disconnect();
  });

  it("a Sentinel-managed client whose sentinels refuse: the client's summary", async () => {
    const port = await freePort();
    const redis = new Redis({ sentinels: [{ host: '127.0.0.1', port }], name: 'mymaster' });
    redis.on('error', () => {});
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    await once(redis, 'error');
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    expect(error).toMatchObject({
      message: expect.stringMatching(
        /^Redis is unavailable: could not acquire lock "orders:1" \(last connection error: All sentinels are unreachable\. /,
      ),
      cause: expect.objectContaining({ name: 'CommandTimeoutError' }),
      connectionError: expect.objectContaining({
        message: expect.stringMatching(/^All sentinels are unreachable\. /),
      }),
    });
    await locker.close();
    redis.disconnect();
  });

  it('a cluster client that reaches no node: the client says all nodes failed', async () => {
    const port = await freePort();
    const redis = new Cluster([{ host: '127.0.0.1', port }]);
    redis.on('error', () => {});
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    await once(redis, 'error');
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    expect(error).toMatchObject({
      message:
        'Redis is unavailable: could not acquire lock "orders:1" (last connection error: Failed to refresh slots cache.)',
      cause: expect.objectContaining({ name: 'CommandTimeoutError' }),
      connectionError: expect.objectContaining({ name: 'ClusterAllFailedError' }),
    });
    await locker.close();
    redis.disconnect();
  });

  it('an error the client reports while ready (a failed subscriber) is not named by a later timeout', async () => {
    await using server = await startRedis();
    const redis = userClient(server.port);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    await once(redis, 'ready');
    // What ioredis emits without losing its connection: a cluster's failed subscriber, a
    // command queue out of step, a failed MONITOR.
    redis.emit('error', new Error('some subscriber failed'));
    server.pause();
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    server.resume();
    expect(error).toMatchObject({
      message: 'Redis is unavailable: could not acquire lock "orders:1"',
      cause: expect.objectContaining({ name: 'CommandTimeoutError' }),
    });
    expect(error).not.toHaveProperty('connectionError');
    await locker.close();
    redis.disconnect();
  });

  it('the connection error is forgotten once the connection is ready again: a frozen server names none', async () => {
    await using server = await startRedis();
    const redis = userClient(server.port);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    await server.kill();
    await once(redis, 'error');
    // Not `once()`: it rejects on the refused reconnections that may come before the restart.
    const ready = new Promise((resolve) => redis.once('ready', resolve));
    await server.restart();
    await ready;
    server.pause();
    const error = await thrown(locker.acquire('orders:1', { wait: 0 }));
    server.resume();
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).toMatchObject({
      message: 'Redis is unavailable: could not acquire lock "orders:1"',
      cause: expect.objectContaining({ name: 'CommandTimeoutError' }),
    });
    expect(error).not.toHaveProperty('connectionError');
    await locker.close();
    redis.disconnect();
  });

  it("the client's own 'error' listeners are as they were: ioredis still reports errors nobody listens to", async () => {
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    const port = await freePort();
    const unheard = new Redis({ host: '127.0.0.1', port, retryStrategy: () => null });
    const heard = userClient(port);
    const lockers = [unheard, heard].map((redis) => createLocker({ redis }));
    // Not `once(unheard, 'end')`: it listens to 'error' meanwhile, which would hide the report.
    const ended = new Promise((resolve) => unheard.once('end', resolve));
    await Promise.all([ended, once(heard, 'error')]);
    const reports = printed.mock.calls.filter((args) => String(args[0]).includes('Unhandled error event'));
    expect(reports).toEqual([['[ioredis] Unhandled error event:', expect.stringContaining('ECONNREFUSED')]]);
    await Promise.all(lockers.map((locker) => locker.close()));
    heard.disconnect();
  });

  it("an 'error' listener that removes itself when called (events.once) still counts as the user's", async () => {
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    const redis = new Redis({ host: '127.0.0.1', port: await freePort(), retryStrategy: () => null });
    const ready = once(redis, 'ready');
    const locker = createLocker({ redis });
    await expect(ready).rejects.toThrow('ECONNREFUSED');
    const reports = printed.mock.calls.filter((args) => String(args[0]).includes('Unhandled error event'));
    expect(reports).toEqual([]);
    await locker.close();
  });

  it("a refused or closed locker leaves the client's 'error' listeners as they were", async () => {
    const redis = new Redis({ host: '127.0.0.1', port: await freePort(), lazyConnect: true });
    const own = () => {};
    redis.on('error', own);
    expect(() => createLocker({ redis, ttl: -1 })).toThrow('invalid option "ttl"');
    expect(redis.listeners('error')).toEqual([own]);
    const lockers = [createLocker({ redis }), createLocker({ redis })];
    // One listener per client, whatever the number of lockers on it.
    expect(redis.listenerCount('error')).toBe(2);
    await lockers[0]!.close();
    expect(redis.listenerCount('error')).toBe(2);
    await lockers[1]!.close();
    expect(redis.listeners('error')).toEqual([own]);
    redis.disconnect();
  });
});
