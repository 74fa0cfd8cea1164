import { createLocker, type RedisClient } from '@lock/core';
import { startRedis, startSentinel } from '@lock/testing';
import { describeLockerContract } from '../../core/test/contract/contract.js';
import { lockerTarget } from '../../core/test/contract/target.js';
import { RLockProtocol } from '../src/index.js';

/**
 * The locker `getLock` runs on: Redisson's RLock protocol on the core engine, no key prefix.
 * Every locker gets its own protocol object, as separate processes would: holders, counts and
 * fences must all be read back from Redis. Redisson's fence counter is the only key allowed to
 * outlive its lock.
 */
function rlockTarget(redis: RedisClient, stop: () => Promise<void>) {
  return lockerTarget({
    create: (overrides) => createLocker({ redis, protocol: new RLockProtocol(), prefix: '', ...overrides }),
    clients: [redis],
    stop,
    counters: /^redisson_lock_token:\{/,
  });
}

describeLockerContract('@lock/redisson getLock (RLock protocol) on a single server', async () => {
  const server = await startRedis();
  return rlockTarget(server.client(), () => server.stop());
});

describeLockerContract(
  '@lock/redisson getLock (RLock protocol) behind sentinels, WAIT gating on',
  async () => {
    const sentinel = await startSentinel({ replicas: 1, sentinels: 3 });
    return rlockTarget(sentinel.client(), () => sentinel.stop());
  },
);
