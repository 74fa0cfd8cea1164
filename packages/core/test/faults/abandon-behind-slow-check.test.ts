import { AcquireTimeoutError, createLocker, LockAbortError, LockUnavailableError } from '@lock/core';
import { commandsInFlight, proxiedClient, startRedis } from '@lock/testing';
import { expect, it, vi } from 'vitest';
import { registrations, SLOW_POLL, untilQueued } from '../support/waiter-queue.js';

const COMMAND_TIMEOUT = 500;

/**
 * A call of a locker that asks the server for its replicas (and, on its first acquire, for its
 * eviction policy) before it sends its attempt, on a key held for 30 s, through a proxy that
 * holds every reply for `delay` ms; `start` makes it give up while those checks are out. Once
 * every command of the call has run, answers the owners still queued and whether a waiter
 * queued then gets the lock at the next release. `used`: the locker acquired once before, more
 * than the 10 s after which it checks the replicas again.
 */
async function giveUpDuringCheck(
  delay: number,
  start: (locker: ReturnType<typeof createLocker>) => Promise<unknown>,
  used = false,
) {
  await using server = await startRedis();
  const admin = server.client();
  const holder = createLocker({ redis: server.client() });
  const third = createLocker({ redis: server.client() });
  const held = await holder.acquire('k', { ttl: 30_000 });
  await using link = await proxiedClient(server);
  const commands = commandsInFlight(link.redis);
  const locker = createLocker({ redis: link.redis, commandTimeout: COMMAND_TIMEOUT });
  if (used) {
    await (await locker.acquire('other')).release();
    // Ten seconds on for every clock of the process (the same for all: a jump, not a drift).
    const now = performance.now.bind(performance);
    vi.spyOn(performance, 'now').mockImplementation(() => now() + 10_001);
  }
  link.proxy.delay({ upstream: 0, downstream: delay });
  const outcome = await start(locker).then(
    () => 'acquired',
    (error: unknown) => error,
  );
  // Every command the call sent, and any it sent on their answers, has run on the server.
  await locker.close();
  link.proxy.pass();
  await commands.drained();
  const left = await registrations(admin, 'k');
  // Queued behind whatever is left there: a ghost owner would be handed the lock for 5 s.
  const waiting = third.acquire('k', { ttl: 5_000, wait: 2_000, retry: SLOW_POLL }).then(
    (lock) => lock,
    (error: unknown) => error,
  );
  await untilQueued(admin, 'k', Object.keys(left).length + 1);
  await held.release();
  const next = await waiting;
  if (!(next instanceof Error)) await (next as { release(): Promise<unknown> }).release();
  await Promise.all([holder.close(), third.close()]);
  return { outcome, left, next };
}

it('an abort while the first acquire checks the server leaves no queue place behind, even when Redis answers slower than the command timeout', async () => {
  const { outcome, left, next } = await giveUpDuringCheck(700, (locker) => {
    const controller = new AbortController();
    const acquiring = locker.acquire('k', { ttl: 5_000, signal: controller.signal, wait: 10_000 });
    setTimeout(() => controller.abort(), 10);
    return acquiring;
  });
  expect(outcome).toBeInstanceOf(LockAbortError);
  expect(left).toEqual({});
  expect(next).not.toBeInstanceOf(AcquireTimeoutError);
  expect(next).toMatchObject({ key: 'k' });
}, 30_000);

it('a wait that ends while the first acquire checks the server leaves no queue place behind', async () => {
  const { outcome, left, next } = await giveUpDuringCheck(1_200, (locker) =>
    locker.acquire('k', { ttl: 5_000, wait: 100 }),
  );
  expect(outcome).toBeInstanceOf(LockUnavailableError);
  expect(left).toEqual({});
  expect(next).not.toBeInstanceOf(AcquireTimeoutError);
  expect(next).toMatchObject({ key: 'k' });
}, 30_000);

it('an abort while a used locker checks the replicas again leaves no queue place behind', async () => {
  try {
    const { outcome, left, next } = await giveUpDuringCheck(
      700,
      (locker) => {
        const controller = new AbortController();
        const acquiring = locker.acquire('k', { ttl: 5_000, signal: controller.signal, wait: 10_000 });
        setTimeout(() => controller.abort(), 10);
        return acquiring;
      },
      true,
    );
    expect(outcome).toBeInstanceOf(LockAbortError);
    expect(left).toEqual({});
    expect(next).not.toBeInstanceOf(AcquireTimeoutError);
    expect(next).toMatchObject({ key: 'k' });
  } finally {
    vi.restoreAllMocks();
  }
}, 30_000);

it('an abort while the server answers an uncached script slowly sends no script after the abandon', async () => {
  await using server = await startRedis();
  const admin = server.client();
  await using link = await proxiedClient(server);
  const commands = commandsInFlight(link.redis);
  // No server checks before the attempt: the only command out when the call gives up is the script.
  const locker = createLocker({
    redis: link.redis,
    commandTimeout: COMMAND_TIMEOUT,
    eviction: 'ignore',
    replication: false,
  });
  await (await locker.acquire('k')).release();
  const holder = createLocker({ redis: server.client() });
  const held = await holder.acquire('k', { ttl: 30_000 });
  // The attempt's EVALSHA is answered NOSCRIPT after the abandon went out: its EVAL would follow it.
  await admin.script('FLUSH');
  link.proxy.delay({ upstream: 0, downstream: 700 });
  const controller = new AbortController();
  const acquiring = locker.acquire('k', { ttl: 5_000, signal: controller.signal, wait: 10_000 });
  setTimeout(() => controller.abort(), 10);
  expect(await acquiring.catch((error: unknown) => error)).toBeInstanceOf(LockAbortError);
  await locker.close();
  link.proxy.pass();
  await commands.drained();
  expect(await registrations(admin, 'k')).toEqual({});
  await held.release();
  await holder.close();
}, 30_000);

it('an abandon leaves alone another call of the same owner checking the server', async () => {
  try {
    await using server = await startRedis();
    const admin = server.client();
    const holder = createLocker({ redis: server.client() });
    const held = await holder.acquire('k', { ttl: 30_000 });
    await using link = await proxiedClient(server);
    const locker = createLocker({ redis: link.redis, commandTimeout: 2_000 });
    const controller = new AbortController();
    const queued = locker
      .acquire('k', { owner: 'X', wait: 20_000, signal: controller.signal, retry: SLOW_POLL })
      .catch((error: unknown) => error);
    await untilQueued(admin, 'k', 1);
    // Ten seconds on: the next attempt asks the server for its replicas again before it is sent.
    const now = performance.now.bind(performance);
    vi.spyOn(performance, 'now').mockImplementation(() => now() + 10_001);
    link.proxy.delay({ upstream: 0, downstream: 300 });
    const single = locker.acquire('k', { owner: 'X', wait: 0 }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort();
    await held.release();
    expect(await queued).toBeInstanceOf(LockAbortError);
    const lock = await single;
    // Cancelled by the other call's abandon, it answered the free lock as busy.
    expect(lock).not.toBeInstanceOf(Error);
    await (lock as { release(): Promise<unknown> }).release();
    await Promise.all([locker.close(), holder.close()]);
  } finally {
    vi.restoreAllMocks();
  }
}, 30_000);
