import { type ExtendEvent, lockEvents, type RenewEvent } from '@lock/core';
import { startProxy, type TcpProxy, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { backendOver, freshKey, type Nodes, ownersOn, startNodes } from './support.js';

// D3: an extension is a lost lock only when so many masters refuse it that no majority can still
// hold it. Fewer renewals for any other reason (masters silent, or a majority that renewed after
// the validity ended) are an outage: QuorumError, which the watchdog retries while the lease is
// valid, and nothing is released.
let nodes: Nodes;
/** Masters 3 and 4 reached through these proxies; 0–2 directly. */
let proxies: TcpProxy[];
let clients: Redis[];
beforeAll(async () => {
  nodes = await startNodes(5);
  proxies = await Promise.all(nodes.masters.servers.slice(3).map((server) => startProxy({ target: server })));
  clients = [...nodes.clients.slice(0, 3), ...proxies.map((proxy) => new Redis(proxy.redisOptions))];
});
afterAll(async () => {
  for (const client of clients.slice(3)) client.disconnect();
  await Promise.all(proxies.map((proxy) => proxy.stop()));
  await nodes.masters.stop();
});

/** Runs `fn` with masters 3 and 4 unreachable (what was sent meanwhile arrives after), then waits until they answered it. */
async function withTwoSilent<T>(fn: () => Promise<T>): Promise<T> {
  for (const proxy of proxies) proxy.blackhole();
  try {
    return await fn();
  } finally {
    for (const proxy of proxies) proxy.pass();
    await Promise.all(clients.map((client) => client.ping()));
  }
}

async function grantOf(backend: ReturnType<typeof backendOver>, resource: string) {
  const grant = await backend.acquire(resource, 'me', 30_000);
  if (!grant.acquired) throw new Error(`${resource} was refused`);
  return grant;
}

describe('RedLock extend during an outage', () => {
  it('2 renewed, 1 refused, 2 silent: QuorumError, and the lease stays on every master', async () => {
    const backend = backendOver(clients, { nodeTimeout: 200 });
    const resource = freshKey('extend-outage');
    const grant = await grantOf(backend, resource);
    await clients[0]!.del(`{${resource}}`);
    const error = await withTwoSilent(() =>
      backend.extend(resource, 'me', grant.token, 30_000).catch((caught: unknown) => caught),
    );
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({ needed: 3, agreed: 2, refused: 1, timedOut: 2 });
    expect(await ownersOn(clients, resource)).toEqual([null, 'me', 'me', 'me', 'me']);
    // Never lost: with every master answering, the next renewal succeeds.
    expect(await backend.extend(resource, 'me', grant.token, 30_000)).not.toBeNull();
    expect(await backend.release(resource, 'me', grant.token)).toBe('released');
    await backend.close();
  });

  it('a majority that renewed after the validity ended: QuorumError saying so, nothing released', async () => {
    // Validity ttl − ⌊0.9 ttl⌋ − 2 = 998 ms, less than the 1.2 s round trip to masters 3 and 4.
    const backend = backendOver(clients, { nodeTimeout: 5_000, driftFactor: 0.9 });
    const resource = freshKey('extend-late');
    const grant = await grantOf(backend, resource);
    for (const proxy of proxies) proxy.delay(600);
    let error: unknown;
    try {
      error = await backend.extend(resource, 'me', grant.token, 10_000).catch((caught: unknown) => caught);
    } finally {
      for (const proxy of proxies) proxy.pass();
    }
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({ needed: 3, agreed: 5, refused: 0, timedOut: 0 });
    expect(String((error as QuorumError).cause)).toContain('past the validity of 998 ms');
    expect(await ownersOn(clients, resource)).toEqual(['me', 'me', 'me', 'me', 'me']);
    expect(await backend.release(resource, 'me', grant.token)).toBe('released');
    await backend.close();
  });

  it('the watchdog retries through the outage and keeps the lock', async () => {
    const locker = createRedlock({ clients, nodeTimeout: 200, prefix: '' });
    const lock = await locker.acquire(freshKey('watchdog-outage'), { ttl: 3_000, renew: true });
    const failedRounds: RenewEvent[] = [];
    const renewals: ExtendEvent[] = [];
    const onRenew = (message: unknown) => {
      if ((message as RenewEvent).failed) failedRounds.push(message as RenewEvent);
    };
    const onExtend = (message: unknown) => {
      if ((message as ExtendEvent).key === lock.key) renewals.push(message as ExtendEvent);
    };
    lockEvents.renew.subscribe(onRenew);
    lockEvents.extend.subscribe(onExtend);
    try {
      await nodes.clients[0]!.del(`{${lock.key}}`);
      await withTwoSilent(() =>
        waitFor('a renewal round that could not tell', async () => failedRounds.length > 0, {
          timeout: 5_000,
        }),
      );
      const before = renewals.length;
      await waitFor('a renewal with every master answering', async () => renewals.length > before, {
        timeout: 5_000,
      });
    } finally {
      lockEvents.renew.unsubscribe(onRenew);
      lockEvents.extend.unsubscribe(onExtend);
    }
    expect(lock.signal.aborted).toBe(false);
    expect(await ownersOn(clients, lock.key)).toEqual([null, lock.owner, lock.owner, lock.owner, lock.owner]);
    expect(await lock.release()).toBe('released');
    await locker.close();
  });
});
