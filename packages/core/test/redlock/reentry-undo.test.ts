import { type ProxiedClient, proxiedClient, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockUnavailableError, QuorumError } from '../../src/errors.js';
import type { RedisClient } from '../../src/protocol.js';
import { createRedlock } from '../../src/redlock/index.js';
import { freshKey, type Nodes, ownersOn, protocol, startNodes } from './support.js';

// A re-entry (or an explicit owner's acquire) that is undone takes off only the hold it added:
// never the outer hold on a master where the re-entry failed, timed out or never ran.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(5);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/** Hold counts of `resource` on each master (0 where free). */
function holdsOn(clients: readonly RedisClient[], resource: string): Promise<number[]> {
  return Promise.all(clients.map(async (client) => (await protocol.inspect(client, resource)).holds));
}

/** Runs `fn` with masters `indexes` out of memory (noeviction): their scripts' first write fails with OOM. */
async function withMemoryFull<T>(indexes: number[], fn: () => Promise<T>): Promise<T> {
  const clients = indexes.map((index) => nodes.clients[index]!);
  for (const client of clients) await client.config('SET', 'maxmemory', '1');
  try {
    return await fn();
  } finally {
    for (const client of clients) await client.config('SET', 'maxmemory', '0');
  }
}

/**
 * The first three masters' clients with masters `indexes` reached through fault proxies. A
 * command cut on the wire is failed, not sent again after the reconnect: it never runs there.
 */
async function proxying(indexes: number[]): Promise<{ clients: Redis[]; proxies: ProxiedClient[] }> {
  const proxies = await Promise.all(
    indexes.map((index) =>
      proxiedClient(nodes.masters.servers[index]!, { redis: { autoResendUnfulfilledCommands: false } }),
    ),
  );
  const clients = nodes.clients
    .slice(0, 3)
    .map((client, index) => proxies[indexes.indexOf(index)]?.redis ?? client);
  return { clients, proxies };
}

const caught = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );

describe('RedLock re-entry undo', () => {
  it.each([
    ['nested in its using', {}],
    ['of its explicit owner', { owner: 'service-a' }],
  ])('keeps the outer hold on masters that refused a re-entry %s with an error (OOM)', async (_, owner) => {
    const locker = createRedlock({ clients: nodes.clients, prefix: '' });
    const other = createRedlock({ clients: nodes.clients, prefix: '' });
    const key = freshKey('reentry-oom');
    await locker.using(key, { ttl: 20_000, ...owner }, async (outer) => {
      // Masters 0–2 refuse the re-entry's HINCRBY; a plain release there would still run its DEL.
      const inner = await withMemoryFull([0, 1, 2], () => caught(locker.acquire(key, { ...owner, wait: 0 })));
      expect(inner).toBeInstanceOf(QuorumError);
      expect(inner).toMatchObject({ agreed: 2, failed: 3 });
      expect(await other.tryAcquire(key)).toBeNull();
      expect(await ownersOn(nodes.clients, key)).toEqual(Array(5).fill(outer.owner));
      expect(await holdsOn(nodes.clients, key)).toEqual([1, 1, 1, 1, 1]);
      expect(outer.signal.aborted).toBe(false);
    });
    expect(await ownersOn(nodes.clients, key)).toEqual([null, null, null, null, null]);
    await Promise.all([locker.close(), other.close()]);
  });

  it('keeps the outer hold on masters the re-entry never reached (connection cut)', async () => {
    const { clients, proxies } = await proxying([1, 2]);
    const locker = createRedlock({ clients, prefix: '', nodeTimeout: 200 });
    const other = createRedlock({ clients: nodes.clients.slice(0, 3), prefix: '' });
    const key = freshKey('reentry-cut');
    try {
      await locker.using(key, { ttl: 20_000, renew: false }, async (outer) => {
        for (const { proxy } of proxies) proxy.resetAfter(0, 'upstream', 1);
        const inner = await caught(locker.acquire(key, { wait: 0 }));
        expect(inner).toBeInstanceOf(QuorumError);
        expect(inner).toMatchObject({ agreed: 1 });
        // Whatever the undo sent to the cut masters runs before this PING, on the same connection.
        for (const { redis } of proxies) {
          await waitFor('the proxied client to reconnect', async () => redis.status === 'ready');
          await redis.ping();
        }
        expect(await other.tryAcquire(key)).toBeNull();
        expect(await ownersOn(clients, key)).toEqual([outer.owner, outer.owner, outer.owner]);
        expect(await holdsOn(clients, key)).toEqual([1, 1, 1]);
      });
      expect(await ownersOn(clients, key)).toEqual([null, null, null]);
    } finally {
      await Promise.all([locker.close(), other.close()]);
      await Promise.all(proxies.map((proxied) => proxied.close()));
    }
  });

  it('undoes a re-entry granted after the call gave up only where it was applied', async () => {
    const { clients, proxies } = await proxying([0, 1]);
    // The call gives up long before its masters answer, so the grant comes back late.
    const locker = createRedlock({ clients, prefix: '', nodeTimeout: 5_000, commandTimeout: 150 });
    const key = freshKey('reentry-late');
    try {
      await locker.using(key, { ttl: 20_000, renew: false }, async (outer) => {
        for (const { proxy } of proxies) proxy.delay(400);
        const inner = await withMemoryFull([2], async () => {
          const rejected = await caught(locker.acquire(key, { wait: 0 }));
          // The delayed masters applied the re-entry (it recorded its attempt id there), then
          // the late grant's undo took them back to one hold each.
          await waitFor('the late grant to be undone', async () => {
            const masters = nodes.clients.slice(0, 2);
            const applied = await Promise.all(
              masters.map((client) => client.hexists(`{${key}}`, `\0${outer.owner}`)),
            );
            return (
              applied.every((found) => found === 1) && (await holdsOn(masters, key)).every((n) => n === 1)
            );
          });
          // Whatever the undo sent to master 2 ran before this PING, on the same connection.
          await clients[2]!.ping();
          return rejected;
        });
        for (const { proxy } of proxies) proxy.pass();
        expect(inner).toBeInstanceOf(LockUnavailableError);
        expect(await ownersOn(clients, key)).toEqual([outer.owner, outer.owner, outer.owner]);
        expect(await holdsOn(clients, key)).toEqual([1, 1, 1]);
      });
    } finally {
      await locker.close();
      await Promise.all(proxies.map((proxied) => proxied.close()));
    }
  });

  it('undoes an applied attempt once however often the undo is sent, and nothing it did not apply', async () => {
    const client = nodes.clients[0]!;
    const resource = freshKey('undo-once');
    await protocol.acquire(client, resource, 'me', 10_000, { wait: 0, attempt: 'outer' });
    await protocol.acquire(client, resource, 'me', 10_000, { wait: 0, attempt: 'inner' });
    expect(await protocol.undo!(client, resource, 'me', 'me', 'never-sent')).toBe('held');
    expect(await holdsOn([client], resource)).toEqual([2]);
    expect(await protocol.undo!(client, resource, 'me', 'me', 'inner')).toBe('held');
    // ioredis resends a script left unanswered by a reconnect: the copy takes off nothing.
    expect(await protocol.undo!(client, resource, 'me', 'me', 'inner')).toBe('held');
    expect(await holdsOn([client], resource)).toEqual([1]);
    // A copy of the undone attempt arriving after its undo counts no hold either.
    expect(
      await protocol.acquire(client, resource, 'me', 10_000, { wait: 0, attempt: 'inner' }),
    ).toMatchObject({ acquired: true, holds: 1 });
    expect(await protocol.release(client, resource, 'me', 'me')).toBe('released');
  });

  it('undoes an attempt applied before concurrent attempts of the same owner', async () => {
    const client = nodes.clients[0]!;
    const resource = freshKey('undo-concurrent');
    // Two re-entries of one owner (a Promise.all inside its critical section): B applied after A.
    for (const attempt of ['outer', 'A', 'B'])
      await protocol.acquire(client, resource, 'me', 10_000, { wait: 0, attempt });
    expect(await protocol.undo!(client, resource, 'me', 'me', 'A')).toBe('held');
    expect(await protocol.undo!(client, resource, 'me', 'me', 'B')).toBe('held');
    expect(await holdsOn([client], resource)).toEqual([1]);
    // A copy of A, resent after B was applied, counts no hold either.
    expect(await protocol.acquire(client, resource, 'me', 10_000, { wait: 0, attempt: 'A' })).toMatchObject({
      holds: 1,
    });
    expect(await protocol.release(client, resource, 'me', 'me')).toBe('released');
  });
});
