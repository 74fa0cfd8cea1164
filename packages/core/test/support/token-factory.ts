import { createLocker } from '@lock/core';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { WorkerLocker } from './worker.js';

/** Where the worker's locker connects: one server, a cluster's startup nodes, or Sentinel. */
export type TokenTarget =
  | { readonly url: string }
  | { readonly cluster: readonly { host: string; port: number }[] }
  | { readonly sentinel: RedisOptions };

/** Contention factory: a token-protocol locker on `config`'s topology. */
export default async function tokenLocker(config: TokenTarget): Promise<WorkerLocker> {
  const redis =
    'url' in config
      ? new Redis(config.url)
      : 'cluster' in config
        ? new Cluster(config.cluster.map((node) => ({ ...node })))
        : new Redis(config.sentinel);
  const locker = createLocker({ redis });
  return {
    locker,
    async close() {
      await locker.close();
      redis.disconnect();
    },
  };
}
