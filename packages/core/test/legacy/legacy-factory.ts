import { createLocker, legacyProtocol } from '@lock/core';
import { Redis } from 'ioredis';
import type { WorkerLocker } from '../support/worker.js';

/** Contention factory: a legacy-protocol locker (ms timestamps) on `config.url`. */
export default async function legacyLocker(config: { url: string }): Promise<WorkerLocker> {
  const redis = new Redis(config.url);
  const locker = createLocker({ redis, protocol: legacyProtocol({ unit: 'ms' }) });
  return {
    locker,
    async close() {
      await locker.close();
      redis.disconnect();
    },
  };
}
