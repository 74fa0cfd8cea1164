import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
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
