import { once } from 'node:events';
import { expect, it } from 'vitest';
import { connectedAgainOnEnd } from '../src/index.js';
import { useRedis } from '../src/vitest/index.js';

it('connects an ended client again until stopped, then leaves it ended', async () => {
  const server = await useRedis();
  const redis = server.client();
  await redis.ping();
  const stop = connectedAgainOnEnd(redis);
  // A manual disconnect ends the client as ioredis's failed Sentinel reconnection does.
  let ended = once(redis, 'end');
  redis.disconnect();
  await ended;
  expect(await redis.ping()).toBe('PONG');
  stop();
  ended = once(redis, 'end');
  redis.disconnect();
  await ended;
  await expect(redis.ping()).rejects.toThrow('Connection is closed');
});
