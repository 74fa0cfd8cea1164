import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, LockerClosedError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

it('using() does not run its function when close() ended the lock between the grant and the call', async () => {
  await using server = await startRedis();
  const locker = createLocker({ redis: server.client() });
  // Inside the acquire call that got the lock, before using() resumes with it: as a reply read in
  // the same turn of the event loop as the grant's, and handled first, can close the locker.
  let closing: Promise<void> | undefined;
  const closeOnGrant = () => {
    closing ??= locker.close();
  };
  subscribe('lock:acquire', closeOnGrant);
  let ran = false;
  try {
    const outcome = await locker
      .using('k', { ttl: 10_000 }, async () => {
        ran = true;
      })
      .catch((error: unknown) => error);
    // As any call still acquiring when close() was called.
    expect(outcome).toBeInstanceOf(LockerClosedError);
    expect(ran).toBe(false);
  } finally {
    unsubscribe('lock:acquire', closeOnGrant);
  }
  await closing;
});
