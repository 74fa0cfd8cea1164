import { createLocker, type Locker, legacyProtocol } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { describeLockerContract } from '../contract/contract.js';
import { FENCE_COUNTERS } from '../contract/target.js';

for (const { unit, label, ttlStep, ttlOverhang } of [
  { unit: 'ms', label: 'ms timestamps', ttlStep: 1, ttlOverhang: 0 },
  // Whole-second ttls, and a key that lives one second more (src/protocols/legacy/README.md): the
  // contract's sub-second leases become 1 s.
  { unit: 's', label: 'whole-second timestamps', ttlStep: 1_000, ttlOverhang: 1_000 },
] as const) {
  describeLockerContract(`legacy protocol (${label}) on a single server`, async () => {
    const server: RedisServer = await startRedis();
    const redis = server.client();
    const protocol = legacyProtocol({ unit });
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
      ttlStep,
      ttlOverhang,
      async close() {
        await Promise.all(made.map((l) => l.close()));
        await server.stop();
      },
    };
  });
}
