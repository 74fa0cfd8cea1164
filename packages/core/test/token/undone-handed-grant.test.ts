import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { untilQueued } from '../support/waiter-queue.js';

it('a waiter that undoes a grant answered too late never takes the lock the release handed it meanwhile', async () => {
  await using server = await startRedis();
  const admin = server.client();
  // Command timeouts well past the stall below: every answer counts, however late.
  const patient = { commandTimeout: 2_000 };
  const holderRedis = server.client();
  const holder = createLocker({ redis: holderRedis, ...patient });
  // Polls every 100 ms at most while queued: one poll is sent during the stall below.
  const first = createLocker({ redis: server.client(), retry: { base: 50, max: 100 }, ...patient });
  const second = createLocker({ redis: server.client(), ...patient });
  // Every script loaded: none is sent twice (NOSCRIPT) after the stall, out of its order.
  for (const locker of [holder, first, second]) await (await locker.acquire('warm-up')).release();
  const held = await holder.acquire('k', { ttl: 10_000 });
  // A lease shorter than the stall: an answer read after the stall is undone, by the owner's name.
  // When the first waiter gets the lock, the fence Redis holds is read: its own, or another's.
  const firstWaiting = first
    .acquire('k', { ttl: 300, wait: 10_000 })
    .then(async (hold) => ({ hold, stored: await admin.hget('{lock:k}', '') }));
  await untilQueued(admin, 'k', 1);
  const secondWaiting = second.acquire('k', { ttl: 5_000, wait: 10_000 });
  await untilQueued(admin, 'k', 2);
  // The release, then the first waiter's next poll, wait behind the stall and run in that order:
  // the release hands the lock to the first waiter and tells it so; the poll finds the lock held
  // by its owner and is answered as it stands, after the lease. Its undo releases by the owner's
  // name, which ends the handed grant too and hands the lock on to the second waiter: the message
  // of the grant undone must not be taken for a lock the first waiter holds.
  // Sent on the holder's connection, the stall is in place before its release, which Redis then
  // holds from the start: any poll it holds came after the release.
  const stall = holderRedis.call('CLIENT', 'PAUSE', '450', 'WRITE');
  await held.release();
  await stall;
  const secondHold = await secondWaiting;
  await secondHold.release();
  const { hold: firstHold, stored } = await firstWaiting;
  expect(stored).toBe(String(firstHold.fence));
  // Given the lock after the second waiter: the poll in the stall was undone.
  expect(firstHold.fence).toBeGreaterThan(secondHold.fence);
  await firstHold.release();
  await Promise.all([holder.close(), first.close(), second.close()]);
});
