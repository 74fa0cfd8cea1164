import { createLocker } from '@lock/core';
import { startSentinel } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';

describeLockerContract('token protocol behind sentinels (WAIT gating on by default)', async () => {
  const sentinel = await startSentinel({ replicas: 1, sentinels: 3 });
  const redis = sentinel.client();
  return lockerTarget({
    create: (overrides) => createLocker({ redis, ...overrides }),
    clients: [redis],
    stop: () => sentinel.stop(),
  });
});

describe('planned failover', () => {
  it('loses none of the locks its replica confirmed, and the client follows the new master', async () => {
    await using sentinel = await startSentinel({ replicas: 1, sentinels: 3 });
    const redis = sentinel.client();
    const locker = createLocker({ redis });
    const locks = [];
    for (let i = 0; i < 20; i++) locks.push(await locker.acquire(`confirmed:${i}`, { ttl: 60_000 }));
    const oldMaster = await sentinel.master();
    const newMaster = await sentinel.failover();
    expect(newMaster.port).not.toBe(oldMaster.port);
    const direct = newMaster.client();
    for (const lock of locks)
      expect(await direct.hgetall(`{lock:${lock.key}}`)).toMatchObject({
        [lock.owner]: '1',
        '': String(lock.fence),
      });
    const rival = createLocker({ redis: sentinel.client() });
    expect(await rival.tryAcquire('confirmed:0')).toBeNull();
    await locker.close();
    await rival.close();
  }, 90_000);
});
