import { waitFor } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LockLostError, QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { backendOver, freshKey, type Nodes, ownersOn, protocol, startNodes } from './support.js';

// S20: an extension counts only with a majority inside validity, and never re-creates a key.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(5);
});
afterAll(async () => {
  await nodes.masters.stop();
});

async function grantOf(backend: ReturnType<typeof backendOver>, resource: string, ttl: number) {
  const grant = await backend.acquire(resource, 'me', ttl);
  if (!grant.acquired) throw new Error(`${resource} was refused`);
  return grant;
}

const pttls = (resource: string) => Promise.all(nodes.clients.map((client) => client.pttl(`{${resource}}`)));

describe('RedLock extend', () => {
  it('resets the ttl on every master and reports a fresh validity', async () => {
    const backend = backendOver(nodes.clients);
    const resource = freshKey('extend');
    const grant = await grantOf(backend, resource, 1_000);
    const extension = await backend.extend(resource, 'me', grant.token, 20_000);
    expect(extension?.validity).toBeGreaterThan(1_000);
    for (const pttl of await pttls(resource)) expect(pttl).toBeGreaterThan(1_000);
    expect(await backend.release(resource, 'me', extension!.token)).toBe('released');
  });

  it('fails once another owner holds a majority, releases its minority and re-creates nothing', async () => {
    const backend = backendOver(nodes.clients);
    const resource = freshKey('extend-taken');
    const grant = await grantOf(backend, resource, 10_000);
    for (const client of nodes.clients.slice(0, 3)) {
      await client.del(`{${resource}}`);
      await protocol.acquire(client, resource, 'thief', 10_000);
    }
    expect(await backend.extend(resource, 'me', grant.token, 10_000)).toBeNull();
    expect(await ownersOn(nodes.clients, resource)).toEqual(['thief', 'thief', 'thief', null, null]);
  });

  it('succeeds with a bare majority still held', async () => {
    const backend = backendOver(nodes.clients);
    const resource = freshKey('extend-majority');
    const grant = await grantOf(backend, resource, 10_000);
    for (const client of nodes.clients.slice(0, 2)) await client.del(`{${resource}}`);
    const extension = await backend.extend(resource, 'me', grant.token, 10_000);
    expect(extension).not.toBeNull();
    // Nothing re-created on the two masters that lost the key.
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, 'me', 'me', 'me']);
  });

  it('fails for a lease gone from every master (expired, deleted) and leaves no key behind', async () => {
    const backend = backendOver(nodes.clients);
    const resource = freshKey('extend-expired');
    // A lease long enough to be granted on a loaded host (a 50 ms one could be refused, its
    // validity spent by the round); its keys are deleted below, as expiry would.
    const grant = await grantOf(backend, resource, 10_000);
    await Promise.all(nodes.clients.map((client) => client.del(`{${resource}}`)));
    expect(await backend.extend(resource, 'me', grant.token, 10_000)).toBeNull();
    expect(await Promise.all(nodes.clients.map((client) => client.exists(`{${resource}}`)))).toEqual([
      0, 0, 0, 0, 0,
    ]);
  });

  it('reports a lease lost when enough masters answered that it is gone, even with the rest frozen', async () => {
    // 4 masters, quorum 3: two answer "not held", so no majority can still hold it.
    const clients = nodes.clients.slice(0, 4);
    const backend = backendOver(clients, { nodeTimeout: 200 });
    const resource = freshKey('extend-lost-frozen');
    const grant = await grantOf(backend, resource, 10_000);
    for (const client of clients.slice(0, 2)) await client.del(`{${resource}}`);
    const frozen = nodes.masters.servers.slice(2, 4);
    for (const server of frozen) server.pause();
    try {
      expect(await backend.extend(resource, 'me', grant.token, 10_000)).toBeNull();
    } finally {
      for (const server of frozen) server.resume();
    }
  });

  it('releases a lease found lost even when another lease of the round cannot be told', async () => {
    // 4 masters, quorum 3, two frozen: the two that answer say `lost` is gone (so no majority can
    // hold it) and still hold `kept`, which the frozen two must decide: a QuorumError for `kept`.
    const clients = nodes.clients.slice(0, 4);
    const backend = backendOver(clients, { nodeTimeout: 200 });
    const lost = freshKey('extend-lost-beside-undecided');
    const kept = freshKey('extend-undecided-beside-lost');
    const grants = [await grantOf(backend, lost, 30_000), await grantOf(backend, kept, 30_000)];
    for (const client of clients.slice(0, 2)) await client.del(`{${lost}}`);
    const frozen = nodes.masters.servers.slice(2, 4);
    for (const server of frozen) server.pause();
    let results: Awaited<ReturnType<typeof backend.extendMany>>;
    try {
      const items = [lost, kept].map((resource, i) => ({ resource, owner: 'me', token: grants[i]!.token }));
      results = await backend.extendMany(items, 30_000);
    } finally {
      for (const server of frozen) server.resume();
    }
    expect(results[0]).toBeNull();
    expect(results[1]).toBeInstanceOf(QuorumError);
    expect(results[1]).toMatchObject({ key: kept, needed: 3, agreed: 2, timedOut: 2 });
    // What the frozen masters queued has run once they answer a PING: the lost lease must not stay
    // on them for its whole ttl, where it keeps the lock from any majority of the four.
    await Promise.all(clients.map((client) => client.ping()));
    expect(await ownersOn(clients, lost)).toEqual([null, null, null, null]);
    expect(await ownersOn(clients, kept)).toEqual(['me', 'me', 'me', 'me']);
    expect(await backend.release(kept, 'me', grants[1]!.token)).toBe('released');
  });

  it('tells the handle of a lease found lost at once, while a lease of the same renewal cannot be told', async () => {
    const clients = nodes.clients.slice(0, 4);
    const locker = createRedlock({ clients, prefix: '', nodeTimeout: 200 });
    // Renewed leases taken together: due within a sixth of their ttl of each other, one round renews both.
    const lease = { ttl: 6_000, renew: true };
    const lost = await locker.acquire(freshKey('watchdog-lost-beside-undecided'), lease);
    const kept = await locker.acquire(freshKey('watchdog-undecided-beside-lost'), lease);
    for (const client of clients.slice(0, 2)) await client.del(`{${lost.key}}`);
    const frozen = nodes.masters.servers.slice(2, 4);
    for (const server of frozen) server.pause();
    try {
      // The next renewal round finds `lost` gone; `kept` is retried until the masters answer.
      await waitFor('the lost lease to be told', async () => lost.signal.aborted, { timeout: 10_000 });
    } finally {
      for (const server of frozen) server.resume();
    }
    // Released everywhere only after its handle knows: not a lease whose holder still believes in it.
    expect((lost.signal.reason as LockLostError).reason).toBe('taken');
    expect(kept.signal.aborted).toBe(false);
    await Promise.all(clients.map((client) => client.ping()));
    expect(await ownersOn(clients, lost.key)).toEqual([null, null, null, null]);
    await kept.release();
    await locker.close();
  });

  it('throws QuorumError when too few masters answer to tell', async () => {
    const clients = nodes.clients.slice(0, 3);
    const backend = backendOver(clients, { nodeTimeout: 200 });
    const resource = freshKey('extend-unreachable');
    const grant = await grantOf(backend, resource, 10_000);
    const frozen = nodes.masters.servers.slice(1, 3);
    for (const server of frozen) server.pause();
    let error: unknown;
    try {
      error = await backend.extend(resource, 'me', grant.token, 10_000).catch((caught: unknown) => caught);
    } finally {
      for (const server of frozen) server.resume();
    }
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({ needed: 2, agreed: 1, refused: 0, timedOut: 2 });
    // Not a loss: the lease stays on every master until it is released or ends.
    await Promise.all(clients.map((client) => client.ping()));
    expect(await ownersOn(clients, resource)).toEqual(['me', 'me', 'me']);
    expect(await backend.release(resource, 'me', grant.token)).toBe('released');
  });

  it('a lease found lost takes off every hold of its owner, on every master still holding it', async () => {
    const backend = backendOver(nodes.clients);
    const resource = freshKey('extend-lost-reentered');
    await grantOf(backend, resource, 10_000);
    const reentry = await grantOf(backend, resource, 10_000);
    expect(reentry.holds).toBe(2);
    // A majority lost the key (restarted without persistence): the lease is lost, and the handles
    // will send nothing; the two masters left must not keep a hold for a whole lease.
    for (const client of nodes.clients.slice(0, 3)) await client.del(`{${resource}}`);
    expect(await backend.extend(resource, 'me', reentry.token, 10_000)).toBeNull();
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null, null, null]);
  });

  it('refuses a token it did not make, renewing nothing', async () => {
    const backend = backendOver(nodes.clients);
    const resource = freshKey('extend-forged');
    await grantOf(backend, resource, 2_000);
    expect(await backend.extend(resource, 'me', 'me', 60_000)).toBeNull();
    for (const pttl of await pttls(resource)) expect(pttl).toBeLessThanOrEqual(2_000);
    expect(await backend.release(resource, 'me', '["me"]')).toBe('not-owner');
  });

  it('renews many leases with one script call per master and reports each', async () => {
    const backend = backendOver(nodes.clients);
    const resources = Array.from({ length: 50 }, () => freshKey('extend-many'));
    const grants = await Promise.all(resources.map((resource) => grantOf(backend, resource, 10_000)));
    const lost = resources[7]!;
    await Promise.all(nodes.clients.map((client) => client.del(`{${lost}}`)));
    const calls = async () => {
      const stats = await Promise.all(nodes.clients.map((client) => client.info('commandstats')));
      return stats.map((text) => Number(/cmdstat_evalsha:calls=(\d+)/.exec(text)?.[1] ?? 0));
    };
    const before = await calls();
    const items = resources.map((resource, i) => ({ resource, owner: 'me', token: grants[i]!.token }));
    const results = await backend.extendMany(items, 20_000);
    const after = await calls();
    expect(results.map((result) => result !== null)).toEqual(resources.map((resource) => resource !== lost));
    // One renewal script per master, plus the release of the lost lease on each.
    expect(after.map((count, i) => count - before[i]!)).toEqual([2, 2, 2, 2, 2]);
  });
});
