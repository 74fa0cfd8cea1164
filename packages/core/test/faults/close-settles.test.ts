import {
  createEngine,
  createLocker,
  LockerClosedError,
  LockUnavailableError,
  ReleaseListener,
  singleBackend,
  tokenProtocol,
} from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

// close() settles once what the calls it ended still owe Redis has been sent: a grant landing
// after it is undone, a queue place is given up. Its caller may quit the connection right after.

it('takes a queued waiter out of the queue before it resolves: the next release hands the lock to nobody', async () => {
  await using server = await startRedis();
  const holder = createLocker({ redis: server.client() });
  const redis = server.client();
  const closing = createLocker({ redis });
  const admin = server.client();
  const held = await holder.acquire('k', { ttl: 20_000 });
  const waiting = closing.acquire('k', { wait: 10_000, ttl: 15_000 }).catch((error: unknown) => error);
  await waitFor('the waiter to be queued', async () => (await admin.zcard('{lock:k}:queue')) === 1);

  await closing.close();
  await redis.quit();

  expect(await waiting).toBeInstanceOf(LockerClosedError);
  expect(await admin.zcard('{lock:k}:queue')).toBe(0);
  expect(await held.release()).toBe('released');
  expect(await holder.isLocked('k')).toBe(false);
  await holder.close();
});

it('undoes a grant that lands after close() was called before it resolves', async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server);
  const locker = createLocker({ redis: proxied.redis, commandTimeout: 2_000 });
  const observer = createLocker({ redis: server.client() });
  await (await locker.acquire('warm', { ttl: 10_000 })).release();
  // The attempt runs at once; its answer comes 200 ms later.
  proxied.proxy.delay({ downstream: 200 });
  const acquiring = locker.acquire('k', { ttl: 15_000 }).catch((error: unknown) => error);
  await waitFor('the attempt to land', () => observer.isLocked('k'));

  await locker.close();
  await proxied.redis.quit();

  expect(await acquiring).toBeInstanceOf(LockerClosedError);
  expect(await observer.isLocked('k')).toBe(false);
  await observer.close();
});

it('sends a release retried after close() when the one in flight then failed, instead of answering released', async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server);
  const locker = createLocker({ redis: proxied.redis, commandTimeout: 300 });
  const observer = createLocker({ redis: server.client() });
  await (await locker.acquire('warm', { ttl: 10_000 })).release();
  const lock = await locker.acquire('k', { ttl: 10_000 });
  proxied.proxy.blackhole();
  const first = lock.release();
  await locker.close();
  await expect(first).rejects.toBeInstanceOf(LockUnavailableError);

  // Nothing freed the key yet: a retry must not say it did.
  await expect(lock.release()).rejects.toBeInstanceOf(LockUnavailableError);
  expect(await observer.isLocked('k')).toBe(true);
  proxied.proxy.pass();
  expect(await lock.release()).toBe('released');
  expect(await observer.isLocked('k')).toBe(false);
  await observer.close();
});

it('a refused attempt answered after close() joins no queue: nothing subscribes for it', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const shared = new ReleaseListener(redis);
  const listened: string[] = [];
  const listen = shared.listen.bind(shared);
  shared.listen = (channel, onRelease) => {
    listened.push(channel);
    return listen(channel, onRelease);
  };
  const locker = createEngine(singleBackend(redis, tokenProtocol(), { subscriber: shared }));
  const holder = createLocker({ redis: server.client() });
  await holder.acquire('b', { ttl: 30_000 });

  const waiting = locker.acquire('b', { wait: 5_000 }).catch((error: unknown) => error);
  await locker.close();

  expect(await waiting).toBeInstanceOf(LockerClosedError);
  expect(listened).toEqual([]);
  await shared.close();
  await holder.close();
});

it('sends one release per handle when an abort listener releases a handle while close() ends it', async () => {
  await using server = await startRedis();
  const closing = createLocker({ redis: server.client() });
  const other = createLocker({ redis: server.client() });
  const admin = server.client();
  // One owner name, three holds in Redis: two handles here, one in the other locker.
  const first = await closing.acquire('k', { ttl: 30_000, owner: 'job' });
  await closing.acquire('k', { ttl: 30_000, owner: 'job' });
  await other.acquire('k', { ttl: 30_000, owner: 'job' });
  expect(await admin.hget('{lock:k}', 'job')).toBe('3');
  first.signal.addEventListener('abort', () => void first.release());

  await closing.close();

  // The other locker's hold is still counted.
  expect(await admin.hget('{lock:k}', 'job')).toBe('1');
  await other.close();
});
