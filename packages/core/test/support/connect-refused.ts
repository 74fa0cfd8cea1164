import type { Redis } from 'ioredis';

/** Once `redis` has seen a connect refused (a killed server may first reset the open connection). */
export function connectRefused(redis: Redis): Promise<void> {
  return new Promise((resolve) => {
    const seen = (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ECONNREFUSED') return;
      redis.off('error', seen);
      resolve();
    };
    redis.on('error', seen);
  });
}
