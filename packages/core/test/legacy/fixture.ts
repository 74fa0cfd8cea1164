import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';

/** The server of a test file (or describe block) and a client on it. */
export interface RedisFixture {
  readonly server: RedisServer;
  readonly redis: Redis;
}

/** Starts one redis-server for the enclosing tests, empties it before each, stops it after all. */
export function useRedis(): RedisFixture {
  let started: RedisFixture | undefined;
  beforeAll(async () => {
    const server = await startRedis();
    started = { server, redis: server.client() };
  });
  afterAll(() => started?.server.stop());
  beforeEach(async () => {
    await started?.redis.flushall();
  });
  return {
    get server() {
      return started!.server;
    },
    get redis() {
      return started!.redis;
    },
  };
}

/** The server's clock in whole Unix seconds (what legacy values in seconds are built from). */
export async function serverSeconds(redis: Redis): Promise<number> {
  const [seconds] = await redis.time();
  return Number(seconds);
}
