import { createEngine, type EngineOptions, type Locker, singleBackend } from '@lock/core';
import { startRedis } from '@lock/testing';
import { describeLockerContract } from '../../core/test/contract/contract.js';
import { RLockProtocol } from '../src/index.js';

/**
 * The locker `getLock` runs on: Redisson's RLock protocol on the core engine, no key prefix.
 * The lockers share one protocol object, as the lock objects of one Redisson client do: the
 * RLock layout stores no fence, so only the holding client can report the holder's fence, and
 * the contract reads it through `other`.
 */
describeLockerContract('@lock/redisson getLock (RLock protocol)', async () => {
  const server = await startRedis();
  const redis = server.client();
  const protocol = new RLockProtocol();
  const made: Locker[] = [];
  const make = (options: EngineOptions = {}) => {
    const locker = createEngine(singleBackend(redis, protocol), { prefix: '', ...options });
    made.push(locker);
    return locker;
  };
  return {
    locker: make(),
    other: make(),
    make,
    clients: [redis],
    counters: /^$/,
    async close() {
      await Promise.all(made.map((locker) => locker.close()));
      await server.stop();
    },
  };
});
