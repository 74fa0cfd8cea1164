import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  type AcquireEvent,
  createLocker,
  type Lock,
  LockAbortError,
  type LockerOptions,
  LockUnavailableError,
} from '@lock/core';
import { commandsInFlight, startProxy, startRedis, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { mark } from '../support/settle.js';

const COMMAND_TIMEOUT = 1_500;

/** A locker whose every command goes through a proxy that can stop answering. */
async function proxiedLocker(options: Omit<LockerOptions, 'redis'> = {}) {
  const server = await startRedis();
  const proxy = await startProxy({ target: server });
  const redis = new Redis({ ...proxy.redisOptions, maxRetriesPerRequest: null });
  redis.on('error', () => {});
  const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT, ...options });
  return {
    server,
    proxy,
    redis,
    locker,
    async [Symbol.asyncDispose]() {
      redis.disconnect();
      await proxy.stop();
      await server.stop();
    },
  };
}

/** What `call` rejected with (none when it resolved), and what `seen()` read as it settled. */
function settled<T>(call: Promise<unknown>, seen: () => T): Promise<{ error: unknown; seen: T }> {
  return call.then(
    () => ({ error: undefined, seen: seen() }),
    (error: unknown) => ({ error, seen: seen() }),
  );
}

it("a release that waited for an unanswered extend settles by its own call's deadline", async () => {
  await using setup = await proxiedLocker();
  const lock = await setup.locker.acquire('queued', { ttl: 60_000 });
  const inFlight = commandsInFlight(setup.redis);
  setup.proxy.blackhole();
  // Due after the extend's command timeout, before that of a release sent once the extend gave up.
  using secondTimeout = mark(1.5 * COMMAND_TIMEOUT);
  const now = () => ({ unanswered: inFlight.pending(), pastSecondTimeout: secondTimeout.fired() });
  // Both are queued on the hold: the release waits its turn behind the extend.
  const extending = settled(lock.extend(), now);
  const releasing = settled(lock.release(), now);
  const extend = await extending;
  const release = await releasing;
  expect(extend.error).toBeInstanceOf(LockUnavailableError);
  expect(release.error).toBeInstanceOf(LockUnavailableError);
  expect((release.error as Error).cause).toMatchObject({ name: 'CommandTimeoutError' });
  // Called with the extend, its deadline ended with the extend's: it settled with its command
  // sent and unanswered, where sent after the extend instead it would have waited a whole
  // command timeout more for it.
  expect(release.seen).toEqual({ unanswered: 2, pastSecondTimeout: false });
  // It was sent all the same: once Redis answers, it frees the lock long before its 60 s lease.
  setup.proxy.pass();
  await waitFor(
    'the late release to free the lock',
    async () => (await setup.server.client().exists('{lock:queued}')) === 0,
  );
});

it('a release called after close() rejects when close could not release the lock, and answers released when it could', async () => {
  await using setup = await proxiedLocker();
  const stranded = await setup.locker.acquire('stranded', { ttl: 60_000 });
  setup.proxy.blackhole();
  await setup.locker.close();
  await expect(stranded.release()).rejects.toBeInstanceOf(LockUnavailableError);
  // Close's release never reached Redis: the lock is still there, until its lease.
  expect(await setup.server.client().exists('{lock:stranded}')).toBe(1);

  const locker = createLocker({ redis: setup.server.client() });
  const freed = await locker.acquire('freed', { ttl: 60_000 });
  await locker.close();
  expect(await freed.release()).toBe('released');
  expect(await setup.server.client().exists('{lock:freed}')).toBe(0);
});

it('a queued waiter aborted while Redis stopped answering rejects at once, and leaves the queue once Redis is back', async () => {
  await using setup = await proxiedLocker({ retry: { base: 60_000, max: 60_000, jitter: 0 } });
  const admin = setup.server.client();
  const holder = createLocker({ redis: admin });
  const lock = await holder.acquire('aborted', { ttl: 60_000 });
  const controller = new AbortController();
  const inFlight = commandsInFlight(setup.redis);
  const now = () => ({ unanswered: inFlight.pending(), pastScriptTimeout: scriptTimeout.fired() });
  const waiting = settled(setup.locker.acquire('aborted', { wait: 120_000, signal: controller.signal }), now);
  await waitFor('the waiter to be queued', async () => (await admin.zcard('{lock:aborted}:queue')) === 1);
  setup.proxy.blackhole();
  // Due before the command timeout of the script that leaves the queue, sent at the abort.
  using scriptTimeout = mark(COMMAND_TIMEOUT / 2);
  controller.abort();
  const aborted = await waiting;
  expect(aborted.error).toMatchObject({ name: 'AbortError' });
  // It settled with that script sent and unanswered: waiting for it would have taken a whole
  // command timeout.
  expect(aborted.seen).toEqual({ unanswered: 1, pastScriptTimeout: false });
  setup.proxy.pass();
  // Polling once a minute, it would stay registered that long had the script not run.
  await waitFor(
    'the waiter to leave the queue',
    async () => (await admin.zcard('{lock:aborted}:queue')) === 0,
  );
  await lock.release();
  await holder.close();
});

it('a waiter with an owner of its own, aborted, leaves the queue before it settles: the same owner queued again is woken by the release', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const holder = createLocker({ redis: admin });
  // Polls once a minute: within its wait, only the release's message can wake it.
  const waiter = createLocker({ redis: server.client(), retry: { base: 60_000, max: 60_000, jitter: 0 } });
  const lock = await holder.acquire('reused', { ttl: 60_000 });
  const controller = new AbortController();
  const first = waiter.acquire('reused', { owner: 'job-7', wait: 30_000, signal: controller.signal });
  await waitFor('the first call to be queued', async () => (await admin.zcard('{lock:reused}:queue')) === 1);
  controller.abort();
  // The same owner again as soon as the first call settles: the first call's cleanup, had it
  // gone on alone (its script not loaded yet, it needs a second round trip), would land after
  // this call joined the queue and take it out; the release would then wake nobody.
  let again: Promise<Lock> | undefined;
  const aborted = await first.catch((error: unknown) => {
    again = waiter.acquire('reused', { owner: 'job-7', wait: 2_000 });
    return error;
  });
  expect(aborted).toBeInstanceOf(LockAbortError);
  const acquired = nextAcquisition('reused');
  await waitFor('the second call to be queued', async () => (await admin.zcard('{lock:reused}:queue')) === 1);
  await lock.release();
  const next = await again!;
  expect(next.owner).toBe('job-7');
  expect(await acquired).toMatchObject({ handoff: true });
  await next.release();
  await Promise.all([holder.close(), waiter.close()]);
});

/** The next `lock:acquire` event of `key` (the default prefix's resource). */
function nextAcquisition(key: string): Promise<AcquireEvent> {
  return new Promise((resolve) => {
    const onAcquire = (message: unknown) => {
      const event = message as AcquireEvent;
      if (event.key !== key) return;
      unsubscribe('lock:acquire', onAcquire);
      resolve(event);
    };
    subscribe('lock:acquire', onAcquire);
  });
}
