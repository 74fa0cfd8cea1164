import { fenceCounter, type Lock } from '@lock/core';
import { startProxy, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { freshKey, idle, type Nodes, ownersOn, refusal, startNodes } from './support.js';

// D6: a RedLock configuration that cannot work is refused (a ttl that leaves no validity, two
// clients of one redis-server) and one that works badly is warned about (a node timeout not
// below the validity), before anything is written.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

const caught = (promise: Promise<unknown>) =>
  promise.then(
    (value) => value,
    (error: unknown) => error,
  );

describe('RedLock ttl and drift factor', () => {
  it('refuses a locker ttl that leaves no validity, naming ttl and driftFactor', () => {
    const clients = [idle(), idle(), idle()];
    const error = refusal(() => createRedlock({ clients, driftFactor: 0.8, ttl: 10 }));
    expect(error.option).toBe('ttl');
    expect(error.message).toContain('10');
    expect(error.message).toContain('driftFactor 0.8');
    expect(clients.map((client) => client.status)).toEqual(['wait', 'wait', 'wait']);
    for (const client of clients) client.disconnect();
  });

  it('refuses an acquisition or extension ttl that leaves no validity, writing nothing', async () => {
    const locker = createRedlock({ clients: nodes.clients, driftFactor: 0.8, prefix: '' });
    const key = freshKey('no-validity');
    const error = await caught(locker.tryAcquire(key, { ttl: 10 }));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ option: 'ttl', value: 10 });
    const counter = fenceCounter(key, `{${key}}`, false);
    const written = await Promise.all(nodes.clients.map((client) => client.exists(`{${key}}`, counter)));
    expect(written).toEqual([0, 0, 0]);
    const lock = await locker.acquire(key, { ttl: 5_000 });
    expect(await caught(lock.extend(10))).toBeInstanceOf(InvalidOptionError);
    await lock.release();
    await locker.close();
  });

  it('warns when the node timeout is not below the validity of a ttl', async () => {
    const warned = new Promise<Error & { code?: string }>((resolve) => {
      const listen = (warning: Error & { code?: string }) => {
        if (warning.code !== 'ERR_LOCK_NODE_TIMEOUT') return;
        process.off('warning', listen);
        resolve(warning);
      };
      process.on('warning', listen);
    });
    const clients = [idle(), idle(), idle()];
    createRedlock({ clients, nodeTimeout: 5_000, ttl: 100 });
    const warning = await warned;
    expect(warning.message).toContain('nodeTimeout 5000 ms');
    expect(warning.message).toContain('97 ms');
    for (const client of clients) client.disconnect();
  });
});

describe('RedLock clients that reach one redis-server twice', () => {
  it('refuses the first acquire and every later call, and leaves nothing behind', async () => {
    const same = nodes.masters.servers[0]!;
    const clients = [same.client(), same.client(), nodes.masters.servers[1]!.client()];
    const locker = createRedlock({ clients, prefix: '' });
    const key = freshKey('same-server');
    const error = await caught(locker.tryAcquire(key, { ttl: 10_000 }));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ option: 'clients' });
    expect((error as Error).message).toContain('clients[0] and clients[1] (the same redis-server');
    expect(await ownersOn(nodes.clients, key)).toEqual([null, null, null]);
    expect(await caught(locker.isLocked(key))).toBe(error);
    expect(await caught(locker.acquire(key, { ttl: 10_000 }))).toBe(error);
    await locker.close();
  });

  it('refuses a first inspect', async () => {
    const same = nodes.masters.servers[2]!;
    const locker = createRedlock({
      clients: [nodes.masters.servers[0]!.client(), same.client(), same.client()],
    });
    const error = await caught(locker.inspect(freshKey('same-server-inspect')));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as Error).message).toContain('clients[1] and clients[2]');
    await locker.close();
  });

  it('asks a master that refuses INFO (ACL) once, not on every call', async () => {
    const servers = nodes.masters.servers;
    await Promise.all(
      servers.map((server) =>
        server.client().acl('SETUSER', 'noinfo', 'on', 'nopass', '~*', '&*', '+@all', '-info'),
      ),
    );
    const clients = servers.map(
      (server) =>
        new Redis({ ...server.redisOptions, username: 'noinfo', password: 'x', enableReadyCheck: false }),
    );
    const refusedInfo = async () =>
      Promise.all(
        servers.map(async (server) => {
          const line = (await server.client().info('commandstats'))
            .split('\r\n')
            .find((entry) => entry.startsWith('cmdstat_info:'));
          return Number(line?.match(/rejected_calls=(\d+)/)?.[1] ?? 0);
        }),
      );
    const before = await refusedInfo();
    const locker = createRedlock({ clients, nodeTimeout: 200 });
    for (let i = 0; i < 20; i++) {
      const lock = await locker.acquire(freshKey('no-info'), { ttl: 10_000 });
      await lock.release();
    }
    const after = await refusedInfo();
    // Once by the check, once by the script that created the namespace's fence counter (its epoch stamp).
    expect(after.map((count, i) => count - before[i]!)).toEqual([2, 2, 2]);
    await locker.close();
    for (const client of clients) client.disconnect();
  });

  it('compares a master that did not answer the first check once it answers', async () => {
    const same = nodes.masters.servers[0]!;
    const proxy = await startProxy({ target: same });
    const behind = new Redis(proxy.redisOptions);
    behind.on('error', () => {});
    const locker = createRedlock({
      clients: [same.client(), behind, nodes.masters.servers[1]!.client()],
      nodeTimeout: 200,
    });
    proxy.blackhole();
    // Unseen, master 1 is not compared: the two others grant.
    const first = await locker.tryAcquire(freshKey('same-server-late'), { ttl: 10_000 });
    proxy.pass();
    expect(first).not.toBeNull();
    await first?.release();
    let error: unknown;
    await waitFor('a call refused once master 1 answered', async () => {
      const answer = await caught(locker.tryAcquire(freshKey('same-server-late'), { ttl: 10_000 }));
      error = answer;
      if (answer instanceof InvalidOptionError) return true;
      await (answer as Lock | null)?.release();
      return false;
    });
    expect((error as Error).message).toContain('clients[0] and clients[1]');
    await locker.close();
    behind.disconnect();
    await proxy.stop();
  });

  it('refuses the very call whose later check finds the duplicate, and gives back what it took', async () => {
    const same = nodes.masters.servers[0]!;
    const other = nodes.masters.servers[1]!;
    const proxy = await startProxy({ target: same });
    const behind = new Redis(proxy.redisOptions);
    behind.on('error', () => {});
    const locker = createRedlock({ clients: [same.client(), behind, other.client()], nodeTimeout: 200 });
    proxy.blackhole();
    const first = await locker.tryAcquire(freshKey('same-server-recheck'), { ttl: 10_000 });
    expect(first).not.toBeNull();
    await first?.release();
    proxy.pass();
    // Past the recheck interval, the next call asks master 1 again; with the other master away,
    // one redis-server counted twice would be its whole majority.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    other.pause();
    const key = freshKey('same-server-recheck');
    try {
      const error = await caught(locker.tryAcquire(key, { ttl: 10_000 }));
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect((error as Error).message).toContain('clients[0] and clients[1]');
      expect(await ownersOn([same.client()], key)).toEqual([null]);
    } finally {
      other.resume();
    }
    await locker.close();
    behind.disconnect();
    await proxy.stop();
  });
});
