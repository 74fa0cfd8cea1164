import { createRedlock, type Lock, LockLostError } from '@lock/core';
import { proxiedClient, type RedisMasters, startMasters } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';

let masters: RedisMasters;
let direct: Redis[];
beforeAll(async () => {
  masters = await startMasters(3);
  direct = masters.clients();
});
afterAll(async () => {
  await masters.stop();
});

it('rejects using() with LockLostError when its release finds the lock deleted on a majority of masters', async () => {
  const locker = createRedlock({ clients: direct });
  // Deleted on two of three masters under the section: no majority holds it any more.
  const lost = await locker
    .using('majority', { ttl: 30_000 }, async () => {
      await Promise.all(direct.slice(0, 2).map((redis) => redis.del('{lock:majority}')));
      return 'done';
    })
    .catch((error: unknown) => error);
  expect(lost).toBeInstanceOf(LockLostError);
  expect(lost).toMatchObject({ reason: 'taken', outcome: { status: 'fulfilled', value: 'done' } });
  // Deleted on one: a majority held it to the end.
  const kept = await locker.using('minority', { ttl: 30_000 }, async () => {
    await direct[0]!.del('{lock:minority}');
    return 'kept';
  });
  expect(kept).toBe('kept');
  await locker.close();
});

it('resolves using() when copies of its release resent after lost replies make the not-owner majority', async () => {
  const proxied = await Promise.all(masters.servers.map((server) => proxiedClient(server)));
  try {
    // Each master's copy is answered after a reconnect: well within this bound, on a loaded machine too.
    const locker = createRedlock({ clients: proxied.map((each) => each.redis), nodeTimeout: 5_000 });
    // The release script loaded on every master: a release answered NOSCRIPT would lose that answer instead.
    await locker.using('warm-up', () => {});
    let handle: Lock | undefined;
    const done = await locker.using('k', { ttl: 30_000 }, async (lock) => {
      handle = lock;
      // Gone from the first master under the section (its not-owner is Redis's word), while on the
      // two others the release runs, its reply is lost, and ioredis sends it again once reconnected.
      await direct[0]!.del('{lock:k}');
      for (const each of proxied.slice(1)) each.proxy.resetAfter(0, 'downstream', 1);
      return 'done';
    });
    expect(done).toBe('done');
    expect(proxied.map((each) => each.proxy.resets)).toEqual([0, 1, 1]);
    // The answer using() had: not-owner on every master, two of them the copies'.
    expect(await handle?.release()).toBe('not-owner');
    expect(await Promise.all(direct.map((redis) => redis.exists('{lock:k}')))).toEqual([0, 0, 0]);
    await locker.close();
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
});
