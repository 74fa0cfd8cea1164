import { createLocker, LockUnavailableError } from '@lock/core';
import { proxiedClient, startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

/** Lock scripts the server ran since `CONFIG RESETSTAT`. */
async function scriptCalls(
  admin: ReturnType<Awaited<ReturnType<typeof startRedis>>['client']>,
): Promise<number> {
  const stats = await admin.info('commandstats');
  const calls = (command: string) =>
    Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? '0');
  return calls('evalsha') + calls('eval');
}

// A server that froze without closing the connection (a stopped process, a silent partition)
// answers nothing, and on one connection an attempt is answered only after every command sent
// before it: an attempt sent behind one of its call still unanswered wins nothing, and ioredis
// would keep each one in memory until the server answers, then run them all at once.
it('sends no attempt behind one of its call that Redis has not answered: one runs after the freeze, not one per retry', async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server);
  const admin = server.client();
  const locker = createLocker({ redis: proxied.redis, commandTimeout: 100 });
  // The server checked and the scripts loaded before the freeze.
  await (await locker.acquire('k')).release();

  proxied.proxy.blackhole();
  const error = await locker
    .acquire('k', { wait: 1_500, retry: { base: 20, max: 20, jitter: 0 } })
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LockUnavailableError);

  await admin.config('RESETSTAT');
  proxied.proxy.pass();
  // close() waits for what the call left behind: its attempt landing late, that grant's undo and
  // its leaving the queue.
  await locker.close();
  // The attempt (a grant, the key being free), its undo, the call's leaving the queue.
  expect(await scriptCalls(admin)).toBe(3);
  expect(await admin.exists('{lock:k}')).toBe(0);
});

// A client that drops what it had not had answered when its connection closes
// (`autoResendUnfulfilledCommands: false`) never settles that attempt: from the close on, the
// connection that would have answered it in order is gone, and the next attempt goes out.
it('sends the next attempt once the connection that carried the unanswered one has closed', async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server, { redis: { autoResendUnfulfilledCommands: false } });
  const locker = createLocker({ redis: proxied.redis, commandTimeout: 200 });
  await (await locker.acquire('k')).release();

  proxied.proxy.blackhole();
  const acquiring = locker.acquire('k', { wait: 10_000, retry: { base: 50, max: 50, jitter: 0 } });
  // Past the first attempt's deadline: it is given up on, and nobody will ever answer it.
  await new Promise((resolve) => setTimeout(resolve, 400));
  proxied.proxy.drop();
  await new Promise((resolve) => setTimeout(resolve, 50));
  proxied.proxy.pass();
  const lock = await acquiring;
  expect(lock.key).toBe('k');
  await lock.release();
  await locker.close();
});
