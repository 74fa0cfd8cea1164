import { startMasters, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createLocker } from '../../src/create-locker.js';
import { createRedlock } from '../../src/redlock/index.js';
import { subscribedChannels } from '../contract/keys.js';
import { SLOW_POLL } from '../support/waiter-queue.js';
import { freshKey } from './support.js';

/** Per master, its connections in pub/sub state (plain or sharded). */
function subscribersPerMaster(admins: readonly Redis[]): Promise<number[]> {
  return Promise.all(
    admins.map(async (admin) => {
      const list = (await admin.call('CLIENT', 'LIST')) as string;
      return list.split('\n').filter((line) => /\b(sub|ssub|psub)=[1-9]/.test(line)).length;
    }),
  );
}

/** Resolves once every master has a subscription to the lock channel of `key`. */
function listenedOnEveryMaster(admins: readonly Redis[], key: string): Promise<void> {
  return waitFor(
    `a subscription to the channel of ${key} on every master`,
    async () =>
      (await Promise.all(admins.map(subscribedChannels))).every((channels) =>
        channels.some((channel) => channel.includes(key)),
      ),
    { interval: 5 },
  );
}

// RedLock's waiters listen on the listener shared on each client, as every other locker's do.
describe('RedLock lockers on the same clients', () => {
  it('share one subscriber per master, which wakes both, outlives the first to close and closes with the last', async () => {
    await using masters = await startMasters(3);
    const admins = masters.clients();
    const holderClients = masters.clients();
    const holder = createRedlock({ clients: holderClients });
    const clients = masters.clients();
    // Poll once a minute: only a release message reaches a waiter within the test.
    const a = createRedlock({ clients, retry: SLOW_POLL });
    const b = createRedlock({ clients, retry: SLOW_POLL });
    const keyA = freshKey('shared-a');
    const keyB = freshKey('shared-b');
    const heldA = await holder.acquire(keyA, { ttl: 30_000 });
    const heldB = await holder.acquire(keyB, { ttl: 30_000 });
    const waitingA = a.acquire(keyA, { wait: 20_000 });
    const waitingB = b.acquire(keyB, { wait: 20_000 });
    await listenedOnEveryMaster(admins, keyA);
    await listenedOnEveryMaster(admins, keyB);
    expect(await subscribersPerMaster(admins)).toEqual([1, 1, 1]);

    await heldA.release();
    const gotA = await waitingA;
    expect(gotA.fence).toBeGreaterThan(heldA.fence);
    await gotA.release();

    // The first locker to close leaves every master's connection to the other's waiter.
    await a.close();
    await heldB.release();
    const gotB = await waitingB;
    expect(gotB.fence).toBeGreaterThan(heldB.fence);
    await gotB.release();
    expect(await subscribersPerMaster(admins)).toEqual([1, 1, 1]);

    // The last to close closes them.
    await b.close();
    await waitFor('the shared connections to close', async () =>
      (await subscribersPerMaster(admins)).every((count) => count === 0),
    );
    await holder.close();
    for (const client of [...admins, ...holderClients, ...clients]) client.disconnect();
  });

  it('share the first client’s subscriber with a single-server locker on it', async () => {
    await using masters = await startMasters(3);
    const admins = masters.clients();
    const holderClients = masters.clients();
    const holder = createRedlock({ clients: holderClients });
    const singleHolder = createLocker({
      redis: holderClients[0] as Redis,
      protocol: 'legacy',
      prefix: 'single:',
    });
    const clients = masters.clients();
    const quorum = createRedlock({ clients, retry: SLOW_POLL });
    // The legacy format has no inbox: its waiting is the lock channel's connection alone.
    const single = createLocker({
      redis: clients[0] as Redis,
      protocol: 'legacy',
      prefix: 'single:',
      retry: SLOW_POLL,
    });
    const quorumKey = freshKey('mixed-quorum');
    const singleKey = freshKey('mixed-single');
    const heldQuorum = await holder.acquire(quorumKey, { ttl: 30_000 });
    const heldSingle = await singleHolder.acquire(singleKey, { ttl: 30_000 });
    const waitingQuorum = quorum.acquire(quorumKey, { wait: 20_000 });
    const waitingSingle = single.acquire(singleKey, { wait: 20_000 });
    await listenedOnEveryMaster(admins, quorumKey);
    await waitFor(
      `a subscription to the channel of ${singleKey}`,
      async () =>
        (await subscribedChannels(admins[0] as Redis)).some((channel) => channel.includes(singleKey)),
      { interval: 5 },
    );
    expect(await subscribersPerMaster(admins)).toEqual([1, 1, 1]);

    await heldQuorum.release();
    await heldSingle.release();
    const [gotQuorum, gotSingle] = await Promise.all([waitingQuorum, waitingSingle]);
    expect(gotQuorum.fence).toBeGreaterThan(heldQuorum.fence);
    expect(gotSingle.owner).not.toBe(heldSingle.owner);
    await Promise.all([gotQuorum.release(), gotSingle.release()]);

    await Promise.all([quorum.close(), single.close()]);
    await waitFor('the shared connections to close', async () =>
      (await subscribersPerMaster(admins)).every((count) => count === 0),
    );
    await Promise.all([holder.close(), singleHolder.close()]);
    for (const client of [...admins, ...holderClients, ...clients]) client.disconnect();
  });
});
