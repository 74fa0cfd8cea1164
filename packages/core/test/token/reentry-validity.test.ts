import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

/** The clock-drift margin of a 30 s lease (1% of it): a validity must end at least this long before the key. */
const DRIFT_OF_30_S = 300;

it('keeps the drift margin of the lease in force when a re-entry asks for a shorter ttl', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const locker = createLocker({ redis, replication: false, eviction: 'ignore' });
  const seen = await locker.using('d', { ttl: 30_000 }, async (outer) => {
    // The re-entry leaves the 30 s lease as it is (a re-entry never shortens it) and reports it.
    const inner = await locker.acquire('d', { ttl: 10 });
    const pttl = await redis.pttl('{lock:d}');
    // The key ends at most `pttl` ms after the answer came back.
    const keyEndsBy = performance.now() + pttl;
    const validUntil = outer.validUntil;
    await inner.release();
    return { pttl, margin: keyEndsBy - validUntil };
  });
  expect(seen.pttl).toBeGreaterThan(29_000);
  expect(seen.margin).toBeGreaterThanOrEqual(DRIFT_OF_30_S);
  await locker.close();
});

it('a re-entry that finds the key deleted within the lease tells the outer hold it was taken, not that it expired', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const locker = createLocker({ redis, replication: false, eviction: 'ignore' });
  const outcome = await locker
    .using('d', { ttl: 10_000 }, async (outer) => {
      await redis.del('{lock:d}');
      const inner = await locker.acquire('d');
      await inner.release();
      return outer.signal.reason;
    })
    .catch((error: unknown) => error);
  expect(outcome).toMatchObject({ name: 'LockLostError', reason: 'taken' });
  await locker.close();
});
