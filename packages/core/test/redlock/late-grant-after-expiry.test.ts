import { createRedlock } from '@lock/core';
import { proxiedClient, startMasters, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

/**
 * An explicit owner's attempt whose grants come back after their lease ended is undone on every
 * master, those that granted it included. By then the same owner (here through another locker)
 * may hold the key again there: the undo must take off only what that attempt added.
 */
it('undoes a grant answered after its lease ended without taking off the hold its owner took since', async () => {
  await using masters = await startMasters(3);
  const direct = masters.clients();
  const proxied = await Promise.all(masters.servers.map((server) => proxiedClient(server)));
  try {
    const slow = createRedlock({ clients: proxied.map((each) => each.redis), nodeTimeout: 5_000 });
    const sharing = createRedlock({ clients: masters.clients(), nodeTimeout: 1_000 });
    const other = createRedlock({ clients: masters.clients(), nodeTimeout: 1_000 });
    await (await slow.acquire('warm', { ttl: 5_000 })).release();
    // Replies held back: requests still reach the masters.
    for (const each of proxied) each.proxy.delay({ downstream: 1_500 });
    const first = slow.acquire('k', { owner: 'w', ttl: 300, wait: 0 }).catch((error: unknown) => error);
    const held = async () => Promise.all(direct.map((client) => client.exists('{lock:k}')));
    await waitFor('the attempt applied everywhere', async () => (await held()).every((n) => n === 1), {
      interval: 5,
    });
    await waitFor('its lease ended everywhere', async () => (await held()).every((n) => n === 0), {
      interval: 5,
    });
    const mine = await sharing.acquire('k', { owner: 'w', ttl: 20_000, wait: 0 });
    // The grants come back too late to hand out: undone.
    expect(await first).toBeInstanceOf(Error);
    for (const each of proxied) each.proxy.pass();
    // Behind the undo on each connection: once answered, it has run.
    await Promise.all(proxied.map((each) => each.redis.ping()));
    expect(await held()).toEqual([1, 1, 1]);
    expect(await other.tryAcquire('k', { ttl: 1_000 })).toBeNull();
    expect(mine.remaining()).toBeGreaterThan(0);
    await mine.release();
    await Promise.all([slow.close(), sharing.close(), other.close()]);
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
}, 30_000);
