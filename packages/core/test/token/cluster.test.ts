import { createLocker, fenceCounter, InvalidKeyError, keySlot } from '@lock/core';
import { startCluster } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';

describeLockerContract('token protocol on a 3-master cluster (sharded pub/sub)', async () => {
  const cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  const redis = cluster.client();
  return lockerTarget({
    create: (overrides) => createLocker({ redis, ...overrides }),
    clients: [redis],
    stop: () => cluster.stop(),
  });
});

describe('token protocol on a cluster: key layout', () => {
  it('keeps every key of a lock in one slot, honours a caller hash tag, and refuses an untaggable name', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    const redis = cluster.client();
    const locker = createLocker({ redis });
    const bare = createLocker({ redis, prefix: '' });
    const tagged = await locker.acquire('{user:7}:cart', { ttl: 5_000 });
    expect(await redis.hgetall('lock:{user:7}:cart')).toMatchObject({
      [tagged.owner]: '1',
      '': String(tagged.fence),
    });
    const counter = fenceCounter('lock:{user:7}:cart', 'lock:{user:7}:cart', true);
    expect(keySlot(counter)).toBe(keySlot('lock:{user:7}:cart'));
    expect(await redis.get(counter)).toBe(String(tagged.fence));
    await tagged.release();
    await expect(bare.acquire('}starts-with-brace')).rejects.toBeInstanceOf(InvalidKeyError);
    await locker.close();
    await bare.close();
  }, 60_000);
});
