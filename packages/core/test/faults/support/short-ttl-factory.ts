import type { Locker } from '@lock/core';
import { Redis } from 'ioredis';
import { type DeploymentName, deployment } from '../../support/deployments.js';
import type { WorkerLocker } from '../../support/worker.js';

/**
 * Contention factory for one of the `DEPLOYMENTS` (one URL per master) whose every acquisition
 * gets `config.ttl` (the shared worker asks for 5 s, too long for a fault to outlast it).
 */
export default async function shortTtlLocker(config: {
  urls: readonly string[];
  ttl: number;
  deployment: DeploymentName;
}): Promise<WorkerLocker> {
  const clients = config.urls.map((url) => new Redis(url));
  const inner = deployment(config.deployment).create(clients);
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
      for (const client of clients) client.disconnect();
    },
  };
}
