import { waitFor } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInChain } from '../../src/chain.js';
import { LockBusyError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { renewals } from '../support/renewals.js';
import { freshKey, type Nodes, ownersOn, startNodes } from './support.js';

// createRedlock gives the engine's Locker over the quorum backend.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

describe('createRedlock', () => {
  it('acquires on every master, fences, and releases everywhere', async () => {
    const locker = createRedlock({ clients: nodes.clients, prefix: '' });
    const key = freshKey('locker');
    const first = await locker.acquire(key, { ttl: 5_000 });
    expect((await ownersOn(nodes.clients, key)).every((owner) => owner === first.owner)).toBe(true);
    expect(await locker.isLocked(key)).toBe(true);
    expect(await locker.inspect(key)).toMatchObject({
      held: true,
      owner: first.owner,
      fence: first.fence,
      holds: 1,
    });
    await first.release();
    expect(await ownersOn(nodes.clients, key)).toEqual([null, null, null]);
    const second = await locker.acquire(key, { ttl: 5_000 });
    expect(second.fence).toBeGreaterThan(first.fence);
    await second.release();
    await locker.close();
  });

  it('refuses a second owner without waiting, naming how long the lock stays held', async () => {
    const locker = createRedlock({ clients: nodes.clients });
    const key = freshKey('busy');
    const held = await locker.acquire(key, { ttl: 5_000 });
    const busy = await runInChain(() => locker.acquire(key, { ttl: 5_000, wait: 0 })).catch(
      (error: unknown) => error,
    );
    expect(busy).toBeInstanceOf(LockBusyError);
    expect((busy as LockBusyError).remaining).toBeGreaterThan(4_000);
    await held.release();
    await locker.close();
  });

  it('wakes a waiter with the release message rather than its backoff', async () => {
    const holder = createRedlock({ clients: nodes.clients });
    // A waiter whose backoff alone would sleep for 20 s between attempts.
    const waiter = createRedlock({ clients: nodes.clients, retry: { base: 20_000, max: 20_000, jitter: 0 } });
    const key = freshKey('wake');
    const held = await holder.acquire(key, { ttl: 30_000 });
    const waiting = waiter.acquire(key, { ttl: 5_000, wait: 15_000 });
    // Release only once the waiter listens on every master, so the wake-up is what lets it in.
    const channel = `{lock:${key}}:released`;
    await waitFor('the waiter to subscribe', async () => {
      const counts = await Promise.all(nodes.clients.map((client) => client.pubsub('NUMSUB', channel)));
      return counts.every((reply) => Number((reply as [string, number])[1]) === 1);
    });
    const releasedAt = performance.now();
    await held.release();
    const next = await waiting;
    expect(performance.now() - releasedAt).toBeLessThan(10_000);
    expect(next.fence).toBeGreaterThan(held.fence);
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('re-enters in the same call chain and frees the lock on the last release', async () => {
    const locker = createRedlock({ clients: nodes.clients });
    const key = freshKey('reentry');
    await locker.using(key, { ttl: 5_000 }, async (outer) => {
      const inner = await locker.acquire(key, { ttl: 5_000 });
      expect(inner.holds).toBe(2);
      expect(inner.fence).toBe(outer.fence);
      await inner.release();
      expect(await locker.isLocked(key)).toBe(true);
    });
    expect(await locker.isLocked(key)).toBe(false);
    await locker.close();
  });

  it('renews a lease with the watchdog across a majority', async () => {
    const locker = createRedlock({ clients: nodes.clients, ttl: 600 });
    const key = freshKey('renew');
    const lock = await locker.acquire(key);
    const firstDeadline = lock.validUntil;
    const lost = new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    // Seven renewals, about a third of the lease apart, outlive two leases: only the watchdog keeps it.
    // A loss ends the wait at once.
    await Promise.race([renewals(7, key), lost]);
    expect(lock.signal.aborted).toBe(false);
    expect(lock.validUntil).toBeGreaterThan(firstDeadline);
    expect((await ownersOn(nodes.clients, `lock:${key}`)).every((owner) => owner === lock.owner)).toBe(true);
    await lock.release();
    await locker.close();
  });
});
