import { QuorumError } from '@lock/core';
import { type ProxiedClient, proxiedClient, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendOver, freshKey, type Nodes, ownersOn, startNodes } from './support.js';

// A release decided by a majority leaves no hold of its owner on a minority that the majority no
// longer counts, and strips none that a silent master may still count with it.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/**
 * The clients with master `index` reached through a fault proxy. A command cut on the wire is
 * failed, not sent again after the reconnect: it never runs there.
 */
async function proxying(index: number): Promise<{ clients: Redis[]; proxied: ProxiedClient }> {
  const proxied = await proxiedClient(nodes.masters.servers[index]!, {
    redis: { autoResendUnfulfilledCommands: false },
  });
  const clients = nodes.clients.map((client, i) => (i === index ? proxied.redis : client));
  return { clients, proxied };
}

/** Runs `fn` with the next command through `proxied` cut before it reaches the server, then waits until its client is back. */
async function withNextCommandCut<T>(proxied: ProxiedClient, fn: () => Promise<T>): Promise<T> {
  proxied.proxy.resetAfter(0, 'upstream', 1);
  try {
    return await fn();
  } finally {
    await waitFor('the proxied client to reconnect', async () => proxied.redis.status === 'ready');
  }
}

async function grantOf(backend: ReturnType<typeof backendOver>, resource: string, owner: string) {
  const grant = await backend.acquire(resource, owner, 30_000);
  if (!grant.acquired) throw new Error(`${resource} was refused to ${owner}`);
  return grant;
}

describe('RedLock release', () => {
  it('takes off the holds a minority still counts once a majority released', async () => {
    const { clients, proxied } = await proxying(2);
    await using _ = proxied;
    const backend = backendOver(clients, { nodeTimeout: 200 });
    const resource = freshKey('release-minority-held');
    const outer = await grantOf(backend, resource, 'me');
    const inner = await grantOf(backend, resource, 'me');
    // The inner release never reaches the third master: the majority decides `held` without it,
    // so that master keeps one hold more than the others.
    expect(await withNextCommandCut(proxied, () => backend.release(resource, 'me', inner.token))).toBe(
      'held',
    );
    expect(await backend.release(resource, 'me', outer.token)).toBe('released');
    expect(await ownersOn(clients, resource)).toEqual([null, null, null]);
    // With one master of the majority down, the other two must still grant the lock to others.
    const down = nodes.masters.servers[0]!;
    down.pause();
    try {
      expect(await backend.acquire(resource, 'other', 5_000)).toMatchObject({ acquired: true });
    } finally {
      down.resume();
    }
  });

  it('leaves the holds of a minority that a silent master may still count with it', async () => {
    const { clients, proxied } = await proxying(1);
    await using _ = proxied;
    const backend = backendOver(clients, { nodeTimeout: 200 });
    const resource = freshKey('release-minority-undecided');
    const outer = await grantOf(backend, resource, 'me');
    // The re-entry is granted by the first and third masters only: they count 2 holds, the second 1.
    const inner = await withNextCommandCut(proxied, () => grantOf(backend, resource, 'me'));
    expect(inner.holds).toBe(2);
    // The inner release frees the second master and leaves one hold on the third; the first,
    // frozen, leaves one too once it runs what it queued: the outer hold is still on a majority.
    const frozen = nodes.masters.servers[0]!;
    frozen.pause();
    try {
      // One released, one held, one silent: nobody can tell yet whether a majority still counts it.
      await expect(backend.release(resource, 'me', inner.token)).rejects.toBeInstanceOf(QuorumError);
    } finally {
      frozen.resume();
    }
    await clients[0]!.ping();
    expect(await ownersOn(clients, resource)).toEqual(['me', null, 'me']);
    expect(await backend.extend(resource, 'me', outer.token, 30_000)).not.toBeNull();
    expect(await backend.release(resource, 'me', outer.token)).toBe('released');
  });
});
