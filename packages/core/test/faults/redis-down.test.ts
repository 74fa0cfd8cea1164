import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, type Lock, LockLostError, LockUnavailableError } from '@lock/core';
import { type RedisServer, startProxy, startRedis, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { failedRenewal, renewals } from '../support/renewals.js';
import { timed } from '../support/settle.js';

/**
 * How late past its own deadline a call may settle on a loaded 2-core machine (event-loop lag).
 * Generous: without the deadline, ioredis's own retries hold a call for over 10 s, or forever.
 */
const SLACK_MS = 5_000;
const COMMAND_TIMEOUT = 300;

/** A client as a new user makes one: ioredis defaults (offline queue, 20 retries per request). */
function userClient(server: RedisServer): Redis {
  const redis = new Redis(server.redisOptions);
  redis.on('error', () => {});
  return redis;
}

/** The cause of a call cut by the locker's own deadline, not by an answer or ioredis giving up. */
const timedOut = { cause: expect.objectContaining({ name: 'CommandTimeoutError' }) };

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
  vi.restoreAllMocks();
});

describe.each(['refused (killed)', 'frozen (SIGSTOP)'] as const)('Redis %s', (fault) => {
  it('every call settles by its deadline with LockUnavailableError, and nothing is left unhandled', async () => {
    process.on('unhandledRejection', onUnhandled);
    const consoleErrors = vi.spyOn(console, 'error');
    await using server = await startRedis();
    const redis = userClient(server);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    const held = await locker.acquire('held', { ttl: 10_000 });
    // A waiter is subscribed before the fault, so the subscriber connection sees it too.
    const busy = await locker.tryAcquire('held');
    expect(busy).toBeNull();

    if (fault === 'refused (killed)') await server.kill();
    else server.pause();

    const acquire = await timed(() => locker.acquire('k', { wait: 1_000 }));
    expect(acquire.error).toBeInstanceOf(LockUnavailableError);
    expect(acquire.error).toMatchObject(timedOut);
    expect(acquire.ms).toBeLessThan(1_000 + COMMAND_TIMEOUT + SLACK_MS);

    for (const call of [
      () => locker.tryAcquire('k'),
      () => locker.acquire('k', { wait: 0 }),
      () => locker.inspect('k'),
      () => locker.isLocked('k'),
      () => held.extend(),
      () => held.release(),
    ]) {
      const { error, ms } = await timed(call);
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(error).toMatchObject(timedOut);
      expect(ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
    }
    const closing = await timed(() => locker.close());
    expect(closing.error).toBeUndefined();
    expect(closing.ms).toBeLessThan(COMMAND_TIMEOUT * 2 + SLACK_MS);
    if (fault === 'frozen (SIGSTOP)') server.resume();
    redis.disconnect();
    expect(unhandled).toEqual([]);
    expect(
      consoleErrors.mock.calls.filter((args) => String(args[0]).includes('Unhandled error event')),
    ).toEqual([]);
  });
});

describe('Redis behind a blackholed link (half-open: connections stay up, nothing flows)', () => {
  it('every call settles by its deadline with LockUnavailableError, and works again once the link heals', async () => {
    await using server = await startRedis();
    await using proxy = await startProxy({ target: server });
    const redis = new Redis(proxy.redisOptions);
    redis.on('error', () => {});
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    const held = await locker.acquire('held', { ttl: 10_000 });
    proxy.blackhole();
    const acquire = await timed(() => locker.acquire('k', { wait: 1_000 }));
    expect(acquire.error).toBeInstanceOf(LockUnavailableError);
    expect(acquire.error).toMatchObject(timedOut);
    expect(acquire.ms).toBeLessThan(1_000 + COMMAND_TIMEOUT + SLACK_MS);
    for (const call of [() => locker.tryAcquire('k'), () => locker.inspect('k'), () => held.release()]) {
      const { error, ms } = await timed(call);
      expect(error).toBeInstanceOf(LockUnavailableError);
      expect(error).toMatchObject(timedOut);
      expect(ms).toBeLessThan(COMMAND_TIMEOUT + SLACK_MS);
    }
    proxy.pass();
    // What was held back is delivered in order: the late attempts are undone, the release lands.
    await waitFor(
      'the late attempts undone and the release landed',
      async () => !(await locker.isLocked('k')) && !(await locker.isLocked('held')),
      { timeout: 5_000 },
    );
    const again = await locker.acquire('k', { ttl: 5_000, wait: 2_000 });
    expect(await again.release()).toBe('released');
    await locker.close();
    redis.disconnect();
  });
});

describe('Redis cut off during the last attempt of a wait', () => {
  it('the acquire settles by wait + one attempt: leaving the queue afterwards does not add another', async () => {
    await using server = await startRedis();
    await using proxy = await startProxy({ target: server });
    const holder = createLocker({ redis: server.client() });
    const redis = new Redis(proxy.redisOptions);
    redis.on('error', () => {});
    // Longer than the slack and the wait together: one more command timeout after the wait would
    // exceed the bound by seconds, not by how late the last attempt went out.
    const commandTimeout = 8_000;
    const locker = createLocker({ redis, commandTimeout });
    await holder.acquire('k', { ttl: 800 });
    const started = performance.now();
    const waiting = timed(() => locker.acquire('k', { wait: 1_000 }));
    const observer = server.client();
    await waitFor('the waiter queued', async () => (await observer.zcard('{lock:k}:queue')) === 1, {
      timeout: 5_000,
    });
    // Its next attempt, when the holder's lease ends, gets no answer until the command timeout.
    proxy.blackhole();
    const { error } = await waiting;
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).toMatchObject(timedOut);
    expect(performance.now() - started).toBeLessThan(1_000 + commandTimeout + SLACK_MS);
    proxy.pass();
    await Promise.all([locker.close(), holder.close()]);
    redis.disconnect();
  }, 60_000);
});

describe('Redis frozen, then back', () => {
  it('an acquire that lands after its caller gave up is undone, and a failed release can be retried', async () => {
    await using server = await startRedis();
    const redis = userClient(server);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    const lock = await locker.acquire('kept', { ttl: 30_000 });
    server.pause();
    const late = await timed(() => locker.tryAcquire('late', { ttl: 30_000 }));
    expect(late.error).toBeInstanceOf(LockUnavailableError);
    const failed = await timed(() => lock.release());
    expect(failed.error).toBeInstanceOf(LockUnavailableError);
    // Unanswered, the release may have landed: the handle vouches for nothing, and may release again.
    expect(lock.released).toBe(true);
    expect(lock.remaining()).toBe(0);
    server.resume();
    // The queued attempt runs once the server thaws and takes the lock; its grant is undone.
    await waitFor('the late grant undone', async () => !(await locker.isLocked('late')), { timeout: 5_000 });
    expect(await lock.release()).toBe('released');
    expect(await locker.isLocked('kept')).toBe(false);
    await locker.close();
    redis.disconnect();
  });

  it('a release that lands after its caller gave up ends the hold as released, not lost when its lease runs out', async () => {
    await using server = await startRedis();
    const redis = userClient(server);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    const events: string[] = [];
    const onRelease = (message: unknown) => {
      const { key, result } = message as { key: string; result: string };
      events.push(`release ${key}: ${result}`);
    };
    const onLost = (message: unknown) => {
      const { key, reason } = message as { key: string; reason: string };
      events.push(`lost ${key}: ${reason}`);
    };
    subscribe('lock:release', onRelease);
    subscribe('lock:lost', onLost);
    try {
      // A lease long enough that a loaded machine does not end it before the late reply is read.
      const lock = await locker.acquire('landed', { ttl: 4_000 });
      server.pause();
      const failed = await timed(() => lock.release());
      expect(failed.error).toBeInstanceOf(LockUnavailableError);
      server.resume();
      await waitFor('the late release to land', async () => events.includes('release landed: released'), {
        timeout: 5_000,
      });
      expect(await locker.isLocked('landed')).toBe(false);
      // Taken after it with the same lease: its loss is reported after the lease of "landed" ran out.
      await locker.acquire('control', { ttl: 4_000 });
      await waitFor('the loss of control', async () => events.includes('lost control: expired'), {
        timeout: 15_000,
      });
      expect(events.filter((event) => event.includes(' landed: '))).toEqual([
        'release landed: error',
        'release landed: released',
      ]);
      expect(await lock.release()).toBe('released');
    } finally {
      unsubscribe('lock:release', onRelease);
      unsubscribe('lock:lost', onLost);
    }
    await locker.close();
    redis.disconnect();
  });

  it("a retry of a release that landed late is answered by it, not sent again; another handle's release answers for itself", async () => {
    await using server = await startRedis();
    const redis = userClient(server);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    // One owner's 11 holds: the one whose release lands late, 8 released after it (past the ids
    // the format recalls), and two that stay.
    const holds: Lock[] = [];
    for (let i = 0; i < 11; i++) holds.push(await locker.acquire('k', { owner: 'o', ttl: 30_000 }));
    const [late, ...others] = holds as [Lock, ...Lock[]];
    server.pause();
    expect((await timed(() => late.release())).error).toBeInstanceOf(LockUnavailableError);
    server.resume();
    await waitFor('the late release to land', async () => (await locker.inspect('k')).holds === 10, {
      timeout: 5_000,
    });
    for (const other of others.slice(0, 8)) expect(await other.release()).toBe('held');
    expect(await late.release()).toBe('held');
    expect((await locker.inspect('k')).holds).toBe(2);
    // The key deleted under the two left: each answers for itself, not with the late answer above.
    await redis.del('{lock:k}');
    expect(await locker.isLocked('k')).toBe(false);
    expect(await others[8]!.release()).toBe('not-owner');
    await locker.close();
    redis.disconnect();
  });

  it('a renewal that fails while the server is frozen is retried within the lease: the lock is kept', async () => {
    await using server = await startRedis();
    const redis = userClient(server);
    const locker = createLocker({ redis, ttl: 1_500, commandTimeout: 150 });
    const lock = await locker.acquire('renewed');
    await renewals(1, 'renewed');
    server.pause();
    // Frozen until a renewal round has failed (renewals are due every 500 ms).
    await failedRenewal();
    server.resume();
    await renewals(1, 'renewed');
    expect(lock.signal.aborted).toBe(false);
    expect((await locker.inspect('renewed')).owner).toBe(lock.owner);
    expect(await lock.release()).toBe('released');
    await locker.close();
    redis.disconnect();
  });

  it('using() rejects with LockLostError when Redis dies under the critical section', async () => {
    await using server = await startRedis();
    const redis = userClient(server);
    const locker = createLocker({ redis, ttl: 900, commandTimeout: 150 });
    const error = await locker
      .using('section', async (lock: Lock) => {
        await server.kill();
        await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
        return 'finished unprotected';
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('renewal-failed');
    expect((error as LockLostError).outcome).toEqual({ status: 'fulfilled', value: 'finished unprotected' });
    await locker.close();
    redis.disconnect();
  });

  it('recovers without a restart once Redis is back', async () => {
    await using server = await startRedis();
    const redis = userClient(server);
    const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
    await server.kill();
    await expect(locker.acquire('back', { wait: 200 })).rejects.toBeInstanceOf(LockUnavailableError);
    await server.restart();
    const lock = await locker.acquire('back', { wait: 5_000 });
    expect(lock.fence).toBeGreaterThan(0);
    expect(await lock.release()).toBe('released');
    await locker.close();
    redis.disconnect();
  });
});
