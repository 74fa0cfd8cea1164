import { createLocker, LockLostError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

const options = { replication: false, eviction: 'ignore' } as const;

it('rejects using() with LockLostError when only its release finds the lock deleted or taken', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const locker = createLocker({ redis, ...options });
  const other = createLocker({ redis, ...options });

  // Deleted under the section (an operator's DEL, a foreign force-unlock): nothing noticed it before the release.
  const deleted = await locker
    .using('d', { ttl: 30_000 }, async () => {
      await redis.del('{lock:d}');
      return 'done';
    })
    .catch((error: unknown) => error);
  expect(deleted).toBeInstanceOf(LockLostError);
  expect(deleted).toMatchObject({
    key: 'd',
    reason: 'taken',
    outcome: { status: 'fulfilled', value: 'done' },
  });

  // Deleted, then taken by another owner, whose hold the release must leave alone.
  let taker: Awaited<ReturnType<typeof other.acquire>> | undefined;
  const failed = new Error('the section failed');
  const taken = await locker
    .using('t', { ttl: 30_000 }, async () => {
      await redis.del('{lock:t}');
      taker = await other.acquire('t', { ttl: 30_000 });
      throw failed;
    })
    .catch((error: unknown) => error);
  expect(taken).toBeInstanceOf(LockLostError);
  expect((taken as LockLostError).outcome).toEqual({ status: 'rejected', reason: failed });
  expect(await other.isLocked('t')).toBe(true);
  expect(await taker?.release()).toBe('released');

  // rejectOnLoss: false answers the section's own outcome.
  const kept = await locker.using('k', { ttl: 30_000, rejectOnLoss: false }, async () => {
    await redis.del('{lock:k}');
    return 'kept';
  });
  expect(kept).toBe('kept');

  // A section whose lock stayed ours resolves as before.
  expect(await locker.using('s', { ttl: 30_000 }, () => 'fine')).toBe('fine');
  await Promise.all([locker.close(), other.close()]);
});
