import { createLocker, type Locker } from '@lock/core';
import { Redis } from 'ioredis';
import type { WorkerLocker } from '../../support/worker.js';

/**
 * Contention factory whose every acquisition gets `config.ttl` (the shared worker asks for 5 s,
 * too long for a fault to outlast it).
 */
export default async function shortTtlLocker(config: { url: string; ttl: number }): Promise<WorkerLocker> {
  const redis = new Redis(config.url);
  const inner = createLocker({ redis });
  const locker: Locker = {
    acquire: (key, options) => inner.acquire(key, { ...options, ttl: config.ttl }),
    tryAcquire: (key, options) => inner.tryAcquire(key, { ...options, ttl: config.ttl }),
    using: inner.using.bind(inner),
    checkOptions: (options) => inner.checkOptions({ ...options, ttl: config.ttl }),
    inspect: (key) => inner.inspect(key),
    isLocked: (key) => inner.isLocked(key),
    close: () => inner.close(),
  };
  return {
    locker,
    async close() {
      await inner.close();
      redis.disconnect();
    },
  };
}
