import { createLocker, type Locker, legacyProtocol } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { describeLockerContract } from '../contract/contract.js';
import { FENCE_COUNTERS } from '../contract/target.js';

describeLockerContract('legacy protocol (ms timestamps) on a single server', async () => {
  const server: RedisServer = await startRedis();
  const redis = server.client();
  const protocol = legacyProtocol({ unit: 'ms' });
  const made: Locker[] = [];
  const make = (options: object = {}) => {
    const locker = createLocker({ redis, protocol, ...options });
    made.push(locker);
    return locker;
  };
  return {
    locker: make(),
    other: make({ redis: server.client() }),
    make,
    clients: [redis],
    counters: FENCE_COUNTERS,
    async close() {
      await Promise.all(made.map((l) => l.close()));
      await server.stop();
    },
  };
});
