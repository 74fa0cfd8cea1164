import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createRedisson, type Redisson, type RedissonOptions } from '../../src/index.js';
import { recordPublished } from './observe.js';

/** A private redis-server for one test file, emptied before each test, with every PUBLISH recorded. */
export function useRedis(): {
  readonly server: RedisServer;
  readonly redis: Redis;
  readonly published: Awaited<ReturnType<typeof recordPublished>>;
} {
  const context = {} as {
    server: RedisServer;
    redis: Redis;
    published: Awaited<ReturnType<typeof recordPublished>>;
  };
  beforeAll(async () => {
    context.server = await startRedis();
    context.redis = context.server.client();
    context.published = await recordPublished(context.server.client());
  });
  afterAll(() => context.server.stop());
  beforeEach(async () => {
    await context.redis.flushall();
    await context.published.take();
  });
  return context;
}

/** What `useRedisson` hands a test file once its server is up. */
export interface RedissonSetup {
  readonly server: RedisServer;
  readonly redis: Redis;
  readonly redisson: Redisson;
}

/**
 * A private redis-server and a Redisson client on it for one test file, emptied before each
 * test and shut down after the last; `assign` receives them once they exist.
 */
export function useRedisson(
  assign: (setup: RedissonSetup) => void,
  options: Partial<RedissonOptions> = {},
): void {
  let setup: RedissonSetup | undefined;
  beforeAll(async () => {
    const server = await startRedis();
    const redis = server.client();
    setup = { server, redis, redisson: createRedisson({ ...options, redis }) };
    assign(setup);
  });
  afterAll(async () => {
    await setup?.redisson.shutdown();
    await setup?.server.stop();
  });
  beforeEach(async () => {
    await setup?.redis.flushall();
  });
}
