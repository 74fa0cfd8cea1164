import { Redis } from 'ioredis';
import { createRedlock } from '../../src/index.js';
import type { WorkerLocker } from '../support/worker.js';

/** Contention factory: a RedLock locker over the masters at `config.urls`. */
export default async function redlockLocker(config: { urls: string[] }): Promise<WorkerLocker> {
  const clients = config.urls.map((url) => new Redis(url));
  const locker = createRedlock({ clients });
  return {
    locker,
    async close() {
      await locker.close();
      for (const client of clients) client.disconnect();
    },
  };
}
