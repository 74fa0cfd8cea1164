import { createLocker, type LockLostError, LockUnavailableError } from '@lock/core';
import { startCluster, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

const EPOCH = 2 ** 32;

it('a resharding moves a held lock’s slot: refused while it migrates, then its counter goes on above on the new master, the hold ends (failover), and the queued waiter is handed the lock by the holder’s release', async () => {
  await using cluster = await startCluster({ masters: 2, replicasPerMaster: 0 });
  const client = cluster.client();
  const holding = createLocker({ redis: client });
  const waiting = createLocker({ redis: cluster.client() });
  const held = await holding.acquire('{r}:a', { ttl: 60_000 });
  const queued = waiting.acquire('{r}:a', { ttl: 60_000, wait: 30_000 });
  await waitFor('the waiter queued', async () => (await client.exists('lock:{r}:a:queue')) === 1);

  const migration = await cluster.migrateSlot({ key: 'lock:{r}:a' });
  // Until the slot is the new master's, either master answers a script naming a key it lacks
  // TRYAGAIN, and each lock call names keys that do not exist (a free lock, an empty queue):
  // refused, however far the keys have moved, and never granted meanwhile.
  const refused = () =>
    expect(holding.acquire('{r}:b', { wait: 0 })).rejects.toBeInstanceOf(LockUnavailableError);
  await refused();
  await migration.moveKeys(['lock:{r}:a']);
  await expect(holding.acquire('{r}:a', { wait: 0 })).rejects.toBeInstanceOf(LockUnavailableError);
  await refused();
  await migration.moveKeys();
  await refused();
  await migration.finish();

  // MIGRATE carried the counter; the first acquisition on the new master stamps it there, which
  // moves it to the next epoch and ends the slot's unconfirmed holds.
  const probe = await holding.acquire('{r}:b', { ttl: 5_000 });
  await probe.release();
  expect(probe.fence).toBeGreaterThan(EPOCH);
  await waitFor('the hold to end', async () => held.signal.aborted);
  expect((held.signal.reason as LockLostError).reason).toBe('failover');
  // Its key moved with the slot: the waiter is still queued behind it until the holder lets go.
  expect(await holding.isLocked('{r}:a')).toBe(true);
  await held.release();
  const next = await queued;
  expect(next.fence).toBeGreaterThan(probe.fence);
  await next.release();
  expect(await client.exists('lock:{r}:a', 'lock:{r}:a:queue', 'lock:{r}:a:waiters')).toBe(0);
  await waiting.close();
  await holding.close();
});
