import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { inspect } from 'node:util';
import { createLocker, type Lock, type LockLostError, type LostEvent } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

it('reports a renewal Redis refused without the owner tokens of its command', async () => {
  await using server = await startRedis();
  const admin = server.client();
  await admin.call('ACL', 'SETUSER', 'renewer', 'on', '>renewer-pw', '~*', '&*', '+@all');
  const locker = createLocker({
    redis: server.client({ username: 'renewer', password: 'renewer-pw' }),
    replication: false,
    eviction: 'ignore',
    ttl: 600,
  });
  // The errors the events carry (an event names the owner itself, on purpose).
  const events: unknown[] = [];
  const onLost = (message: unknown) => events.push((message as LostEvent).error);
  subscribe('lock:lost', onLost);
  const a = await locker.acquire('a');
  const b = await locker.acquire('b');
  const lost = (lock: typeof a) =>
    new Promise<LockLostError>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason as LockLostError), {
        once: true,
      }),
    );
  const losses = Promise.all([lost(a), lost(b)]);
  let entered!: (lock: Lock) => void;
  const inSection = new Promise<Lock>((resolve) => {
    entered = resolve;
  });
  const section = locker
    .using('c', (c) => {
      entered(c);
      return new Promise((resolve) => c.signal.addEventListener('abort', resolve, { once: true }));
    })
    .catch((error: unknown) => error);
  const c = await inSection;
  // Every renewal is refused (NOPERM) from now on, in the batch that renews the three locks.
  await admin.call('ACL', 'SETUSER', 'renewer', '-@scripting');
  const reasons = [...(await losses), (await section) as LockLostError];
  unsubscribe('lock:lost', onLost);
  expect(reasons.map((reason) => reason.reason)).toEqual([
    'renewal-failed',
    'renewal-failed',
    'renewal-failed',
  ]);
  expect(reasons.map((reason) => (reason.cause as Error).message.startsWith('NOPERM'))).toEqual([
    true,
    true,
    true,
  ]);
  expect((reasons[0]!.cause as { command?: unknown }).command).toEqual({ name: 'evalsha' });
  expect(events).toHaveLength(3);
  const reported = inspect([reasons, events], { depth: null });
  expect([a, b, c].map((lock) => reported.includes(lock.owner))).toEqual([false, false, false]);
  await locker.close();
});

it('publishes a release Redis refused without the owner token of its command', async () => {
  await using server = await startRedis();
  const admin = server.client();
  await admin.call('ACL', 'SETUSER', 'releaser', 'on', '>releaser-pw', '~*', '&*', '+@all');
  const locker = createLocker({
    redis: server.client({ username: 'releaser', password: 'releaser-pw' }),
    replication: false,
    eviction: 'ignore',
  });
  // Read as published: a subscriber may log or export it at once.
  const errors: string[] = [];
  const onRelease = (message: unknown) =>
    errors.push(inspect((message as { error?: unknown }).error, { depth: null }));
  const lock = await locker.acquire('r', { ttl: 60_000 });
  await admin.call('ACL', 'SETUSER', 'releaser', '-@scripting');
  subscribe('lock:release', onRelease);
  const refused = await lock.release().catch((error: unknown) => error);
  unsubscribe('lock:release', onRelease);
  expect((refused as Error).message).toMatch(/^NOPERM/);
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatch(/NOPERM/);
  expect(errors[0]!.includes(lock.owner)).toBe(false);
  await admin.call('ACL', 'SETUSER', 'releaser', '+@scripting');
  await locker.close();
});
