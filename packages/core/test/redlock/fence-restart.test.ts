import { fenceCounter } from '@lock/core';
import { type RedisMasters, startMasters, startProxy, type TcpProxy } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SEEDED_FENCE } from '../../src/redlock/fence.js';
import { createRedlock } from '../../src/redlock/index.js';
import { backendOver, freshKey } from './support.js';

// D2: a master restarted without persistence loses its fence counter. A counter a master makes
// is seeded from its clock, so the fence does not go backwards when that master is the only one
// a later majority shares with the majority that holds the last fence.
let masters: RedisMasters;
const proxies: TcpProxy[] = [];
const opened: Redis[] = [];
beforeAll(async () => {
  masters = await startMasters(3);
});
afterAll(async () => {
  for (const client of opened) client.disconnect();
  await Promise.all(proxies.map((proxy) => proxy.stop()));
  await masters.stop();
});

/** Clients of the three masters as one process sees them: `cut` is reached through a proxy that drops every connection. */
async function clientsWithout(cut: number): Promise<Redis[]> {
  const proxy = await startProxy({ target: masters.servers[cut]! });
  proxy.drop();
  proxies.push(proxy);
  const clients = masters.servers.map((server, index) => {
    // No offline queue: a command to the unreachable master fails at once instead of waiting.
    const options =
      index === cut ? { ...proxy.redisOptions, enableOfflineQueue: false } : server.redisOptions;
    const client = new Redis(options);
    client.on('error', () => {});
    return client;
  });
  opened.push(...clients);
  return clients;
}

/** The fence counter of `resource` on each master, read directly. */
const counters = (resource: string) =>
  Promise.all(masters.clients().map((client) => client.get(fenceCounter(resource, `{${resource}}`, false))));

describe('RedLock fence across a master restarted without persistence', () => {
  it('stays above every earlier fence when the restarted master is the one a new majority shares', async () => {
    const key = freshKey('restart');
    // A never reaches master 2: its fences live on masters 0 and 1 only.
    const a = createRedlock({ clients: await clientsWithout(2), prefix: '' });
    const fences: number[] = [];
    for (let round = 0; round < 5; round++) {
      const lock = await a.acquire(key, { ttl: 10_000, wait: 0 });
      fences.push(lock.fence);
      await lock.release();
    }
    await a.close();
    expect(fences).toEqual([...fences].sort((x, y) => x - y));
    expect(new Set(fences).size).toBe(5);

    await masters.servers[0]!.restart();
    // B never reaches master 1, the only master left that holds A's fences.
    const b = createRedlock({ clients: await clientsWithout(1), prefix: '' });
    const lock = await b.acquire(key, { ttl: 10_000, wait: 0 });
    const left = await counters(key);
    expect(
      lock.fence,
      `A's fences ${fences.join(', ')}; counters after B: ${left.join(', ')}`,
    ).toBeGreaterThan(fences.at(-1)!);
    await lock.release();
    await b.close();
  });

  it('seeds every grant drawn from a counter not seeded yet, also those that drew after its creation', async () => {
    const clients = masters.clients();
    const backend = backendOver(clients);
    // One namespace, so every acquisition draws from the same counter on each master, which
    // none of them has seeded: most draw 2, 3, … before the first seed lands.
    const namespace = freshKey('concurrent-first');
    const resources = Array.from({ length: 20 }, (_, i) => `${namespace}:${i}`);
    const grants = await Promise.all(resources.map((resource) => backend.acquire(resource, 'me', 10_000)));
    const fences = grants.map((grant) => (grant.acquired ? grant.fence : null));
    expect(fences.filter((fence) => fence === null || fence < SEEDED_FENCE)).toEqual([]);
    await backend.close();
  });

  it('once seeded, spends one script call per master and no TIME on each later acquisition', async () => {
    const clients = masters.clients();
    const backend = backendOver(clients);
    const namespace = freshKey('steady');
    const first = await backend.acquire(`${namespace}:first`, 'me', 10_000);
    expect(first.acquired).toBe(true);
    const calls = async () => {
      const stats = await Promise.all(clients.map((client) => client.info('commandstats')));
      return stats.map((text) => {
        const count = (command: string) =>
          Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(text)?.[1] ?? 0);
        return { scripts: count('evalsha') + count('eval'), time: count('time') };
      });
    };
    const before = await calls();
    const next = await backend.acquire(`${namespace}:next`, 'me', 10_000);
    const after = await calls();
    expect(next.acquired && first.acquired && next.fence > first.fence).toBe(true);
    expect(after.map((count, i) => count.scripts - before[i]!.scripts)).toEqual([1, 1, 1]);
    expect(after.map((count, i) => count.time - before[i]!.time)).toEqual([0, 0, 0]);
    await backend.close();
  });
});
