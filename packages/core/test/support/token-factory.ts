import { createLocker } from '@lock/core';
import { Redis } from 'ioredis';
import type { WorkerLocker } from './worker.js';

/** Contention factory: a token-protocol locker on `config.url`. */
export default async function tokenLocker(config: { url: string }): Promise<WorkerLocker> {
  const redis = new Redis(config.url);
  const locker = createLocker({ redis });
  return {
    locker,
    async close() {
      await locker.close();
      redis.disconnect();
    },
  };
}
