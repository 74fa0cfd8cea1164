import { createLocker, LockUnavailableError } from '@lock/core';
import { startProxy, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';

const COMMAND_TIMEOUT = 1_500;

/** A locker whose every command goes through a proxy that can stop answering. */
async function proxiedLocker() {
  const server = await startRedis();
  const proxy = await startProxy({ target: server });
  const redis = new Redis({ ...proxy.redisOptions, maxRetriesPerRequest: null });
  redis.on('error', () => {});
  const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
  return {
    server,
    proxy,
    locker,
    async [Symbol.asyncDispose]() {
      redis.disconnect();
      await proxy.stop();
      await server.stop();
    },
  };
}

/** When `call` settled, and with what error (none when it resolved). */
function settled(call: Promise<unknown>): Promise<{ error: unknown; at: number }> {
  return call.then(
    () => ({ error: undefined, at: performance.now() }),
    (error: unknown) => ({ error, at: performance.now() }),
  );
}

it("a release that waited for an unanswered extend gives up by its own call's deadline, unsent", async () => {
  await using setup = await proxiedLocker();
  const lock = await setup.locker.acquire('queued', { ttl: 60_000 });
  setup.proxy.blackhole();
  // Both are queued on the hold: the release waits its turn behind the extend.
  const extending = settled(lock.extend());
  const releasing = settled(lock.release());
  const extend = await extending;
  const release = await releasing;
  expect(extend.error).toBeInstanceOf(LockUnavailableError);
  expect(release.error).toBeInstanceOf(LockUnavailableError);
  expect((release.error as Error).cause).toMatchObject({ name: 'CommandTimeoutError' });
  // Called with the extend, its deadline ended with the extend's: sent after it instead, it
  // would have waited a whole command timeout more.
  expect(release.at - extend.at).toBeLessThan(COMMAND_TIMEOUT / 2);
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
