import { type ProxiedClient, proxiedClient, startProxy, type TcpProxy, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { backendOver, freshKey, type Nodes, ownersOn, protocol, startNodes } from './support.js';

// D4: a release answers `released` only once no majority can still count a hold, and `held`
// when a majority does. When the silent masters decide which, it is a QuorumError: the handle
// is kept, and the retry (same release id) takes off no second hold where the first landed.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(5);
});
afterAll(async () => {
  await nodes.masters.stop();
});

const holdsOn = (resource: string) =>
  Promise.all(nodes.clients.map(async (client) => (await protocol.inspect(client, resource)).holds));

describe('RedLock release that the answers cannot decide', () => {
  let cut: ProxiedClient;
  let silent: TcpProxy[];
  let clients: Redis[];
  beforeAll(async () => {
    // Master 0 through a proxy that can cut one command (never resent), 3 and 4 through proxies
    // that can go silent.
    cut = await proxiedClient(nodes.masters.servers[0]!, { redis: { autoResendUnfulfilledCommands: false } });
    silent = await Promise.all(
      nodes.masters.servers.slice(3).map((server) => startProxy({ target: server })),
    );
    clients = [
      cut.redis,
      ...nodes.clients.slice(1, 3),
      ...silent.map((proxy) => new Redis(proxy.redisOptions)),
    ];
  });
  afterAll(async () => {
    for (const client of clients.slice(3)) client.disconnect();
    await Promise.all(silent.map((proxy) => proxy.stop()));
    await cut.close();
  });

  it('holds [1, 2, 2, 2, 2] with masters 3 and 4 silent: QuorumError, then held on retry', async () => {
    const locker = createRedlock({ clients, nodeTimeout: 200, prefix: '' });
    const key = freshKey('release-undecided');
    // Scripts loaded first: a NOSCRIPT answer from a silent master would send the release again
    // after the PING that shows it ran.
    await (await locker.acquire(`${key}:warm`, { ttl: 30_000 })).release();
    const outer = await locker.acquire(key, { ttl: 30_000, owner: 'o' });
    // The re-entry never reaches master 0: the four others count two holds, master 0 one.
    cut.proxy.resetAfter(0, 'upstream', 1);
    const inner = await locker.acquire(key, { ttl: 30_000, owner: 'o' });
    await waitFor('master 0 to be reachable again', async () => cut.redis.status === 'ready');
    expect(inner.holds).toBe(2);
    expect(await holdsOn(key)).toEqual([1, 2, 2, 2, 2]);

    for (const proxy of silent) proxy.blackhole();
    let error: unknown;
    try {
      error = await inner.release().catch((caught: unknown) => caught);
    } finally {
      for (const proxy of silent) proxy.pass();
      await Promise.all(clients.map((client) => client.ping()));
    }
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({ needed: 3, agreed: 3, refused: 0, timedOut: 2 });
    // Four masters still count the inner hold: the handle may release it again.
    expect(await holdsOn(key)).toEqual([0, 1, 1, 1, 1]);
    expect(await inner.release()).toBe('held');
    expect(await holdsOn(key)).toEqual([0, 1, 1, 1, 1]);
    expect(await outer.release()).toBe('released');
    expect(await ownersOn(nodes.clients, key)).toEqual([null, null, null, null, null]);
    await locker.close();
  });
});

describe('RedLock release that the answers decide without a majority of either', () => {
  it('holds [1, 1, 2, 2] on 4 masters, all answering: released, and no master keeps a hold', async () => {
    const clients = nodes.clients.slice(0, 4);
    const backend = backendOver(clients);
    const resource = freshKey('release-split');
    const grant = await backend.acquire(resource, 'me', 30_000);
    if (!grant.acquired) throw new Error(`${resource} was refused`);
    // A re-entry whose undo never reached masters 2 and 3 left one hold more there.
    for (const client of clients.slice(2)) await client.hincrby(`{${resource}}`, 'me', 1);
    // Neither released nor held is a majority of 4, but no majority can still count a hold: it is
    // released, and the two holds left would keep the lock from every majority for a lease.
    expect(await backend.release(resource, 'me', grant.token)).toBe('released');
    expect(await ownersOn(clients, resource)).toEqual([null, null, null, null]);
    await backend.close();
  });
});
