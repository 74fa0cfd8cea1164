import { createLocker, LockerClosedError, LockUnavailableError } from '@lock/core';
import { commandsInFlight, startProxy, startRedis, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

describe('close()', () => {
  it('gives up the locks it holds, so others need not wait for their ttl', async () => {
    await using server = await startRedis();
    const locker = createLocker({ redis: server.client() });
    const rival = createLocker({ redis: server.client() });
    const outer = await locker.acquire('closing', { ttl: 60_000 });
    const plain = await locker.acquire('plain', { ttl: 60_000 });
    await locker.close();
    expect(await rival.isLocked('closing')).toBe(false);
    expect(await rival.isLocked('plain')).toBe(false);
    await outer.release();
    await plain.release();
    const next = await rival.acquire('closing', { wait: 0 });
    expect(next.fence).toBeGreaterThan(outer.fence);
    await expect(locker.acquire('closing')).rejects.toBeInstanceOf(LockerClosedError);
    await next.release();
    await rival.close();
  });

  it('called again while it runs, resolves only once the first has given the locks up', async () => {
    await using server = await startRedis();
    const client = server.client();
    const locker = createLocker({ redis: client });
    const rival = createLocker({ redis: server.client() });
    const held = await locker.acquire('twice', { ttl: 60_000 });
    // On the locker's connection: the extend goes behind the sleep, and the release close() sends
    // waits for the extend's answer.
    const frozen = client.call('DEBUG', 'SLEEP', '0.3');
    const extending = held.extend().catch((error: Error) => error.name);
    const first = locker.close();
    await locker.close();
    expect(await rival.isLocked('twice')).toBe(false);
    expect(await extending).toBe('LockLostError');
    await Promise.all([first, frozen]);
    await rival.close();
  });
  it('ends single tries whose attempt is in flight with LockerClosedError, busy or with Redis frozen', async () => {
    await using server = await startRedis();
    const locker = createLocker({ redis: server.client() });
    const rival = createLocker({ redis: server.client() });
    const held = await rival.acquire('busy', { ttl: 60_000 });
    // Each try's attempt is written before close() is called, and answered (or not) after.
    const busy = [locker.tryAcquire('busy'), locker.acquire('busy', { wait: 0 })].map((call) =>
      call.catch((error: unknown) => error),
    );
    await locker.close();
    for (const outcome of await Promise.all(busy)) expect(outcome).toBeInstanceOf(LockerClosedError);
    await held.release();

    const frozen = createLocker({ redis: server.client(), commandTimeout: 300 });
    await (await frozen.acquire('warm-up')).release();
    server.pause();
    try {
      const tries = [frozen.tryAcquire('free'), frozen.acquire('free', { wait: 0 })].map((call) =>
        call.catch((error: unknown) => error),
      );
      const closing = frozen.close();
      for (const outcome of await Promise.all(tries)) expect(outcome).toBeInstanceOf(LockerClosedError);
      server.resume();
      await closing;
    } finally {
      server.resume();
    }
    await rival.close();
  });
  it('sends again a release that was on the wire when close() was called and failed after it', async () => {
    await using server = await startRedis();
    await using proxy = await startProxy({ target: server });
    // Nothing resent by the client: the release on the wire when the link drops fails.
    const redis = new Redis({
      ...proxy.redisOptions,
      autoResendUnfulfilledCommands: false,
      retryStrategy: () => 20,
    });
    redis.on('error', () => {});
    const inFlight = commandsInFlight(redis);
    const admin = server.client();
    const locker = createLocker({ redis, commandTimeout: 5_000 });
    const first = await locker.acquire('k', { owner: 'o', ttl: 60_000 });
    const second = await locker.acquire('k', { owner: 'o', ttl: 60_000 });
    proxy.blackhole();
    const failing = first.release().catch((error: unknown) => error);
    // close() releases the other handle only, behind the first handle's release.
    const closing = locker.close();
    await waitFor('the first release on the wire', async () => inFlight.pending() > 0);
    proxy.drop();
    expect(await failing).toBeInstanceOf(LockUnavailableError);
    proxy.pass();
    await closing;
    expect(await admin.hget('{lock:k}', 'o')).toBe('1');
    // Retried, it is sent: close() never sent it.
    expect(await first.release()).toBe('released');
    expect(await admin.exists('{lock:k}')).toBe(0);
    expect(await second.release()).toBe('held');
    redis.disconnect();
  });
  it('answers a handle first released after close() with close()’s failed release, retried too, sending nothing of its own', async () => {
    await using server = await startRedis();
    const admin = server.client();
    // Two lockers, one explicit owner: each count is one holder's.
    const mine = createLocker({ redis: server.client(), commandTimeout: 300 });
    const other = createLocker({ redis: server.client() });
    const held = await mine.acquire('k', { owner: 'o', ttl: 60_000 });
    const others = await other.acquire('k', { owner: 'o', ttl: 60_000 });
    server.pause();
    try {
      // Its release of the handle left is not answered in time: it lands once Redis is back.
      await mine.close();
    } finally {
      server.resume();
    }
    await waitFor('close()’s release to land', async () => (await admin.hget('{lock:k}', 'o')) === '1');
    await expect(held.release()).rejects.toBeInstanceOf(LockUnavailableError);
    await expect(held.release()).rejects.toBeInstanceOf(LockUnavailableError);
    // The other locker's count is left: its holder still holds the lock.
    expect(await admin.hget('{lock:k}', 'o')).toBe('1');
    expect(await others.release()).toBe('released');
    await other.close();
  });
});
