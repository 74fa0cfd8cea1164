import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { connectedAgainOnEnd, waitFor } from '../src/index.js';
import { useRedis, useSentinel } from '../src/vitest/index.js';

/** Resolves when `redis` next ends (`events.once` would reject on the 'error' emitted before). */
function ending(redis: Redis): Promise<void> {
  return new Promise((resolve) => redis.once('end', () => resolve()));
}

it('connects an ended client again until stopped, then leaves it ended', async () => {
  const server = await useRedis();
  const redis = server.client();
  await redis.ping();
  const stop = connectedAgainOnEnd(redis);
  let ended = ending(redis);
  redis.disconnect();
  await ended;
  expect(await redis.ping()).toBe('PONG');
  stop();
  ended = ending(redis);
  redis.disconnect();
  await ended;
  await expect(redis.ping()).rejects.toThrow('Connection is closed');
});

it('brings back a failoverDetector client that ioredis ended when a +switch-master came during its reconnection', async () => {
  const setup = await useSentinel({ replicas: 1, sentinels: 3 });
  const [first, second] = setup.sentinels;
  // Asks the sentinels in this order: the first one, paused, holds the reconnection.
  const redis = setup.client({ failoverDetector: true });
  const errors: string[] = [];
  redis.on('error', (error: Error) => errors.push(error.message));
  const stop = connectedAgainOnEnd(redis);
  const old = await setup.master();
  await waitFor('the failover detector subscribed', async () => {
    await redis.ping();
    // A sentinel answers no PUBSUB; its client list shows the subscription.
    return String(await second!.client().call('CLIENT', 'LIST')).includes(' sub=1 ');
  });
  first!.pause();
  const ended = ending(redis);
  await old.client().call('CLIENT', 'KILL', 'TYPE', 'normal');
  await waitFor('the client asking the paused sentinel', async () => redis.status === 'connecting');
  // A failover the second sentinel leads: its +switch-master reaches the lost connection's detector.
  expect(await second!.client().call('SENTINEL', 'FAILOVER', setup.masterName)).toBe('OK');
  const promoted = await setup.switchedFrom(old);
  first!.resume();
  await ended;
  expect(errors).toContain('Connection is closed.');
  expect(await redis.ping()).toBe('PONG');
  expect(await redis.info('server')).toContain(`\r\ntcp_port:${promoted.port}\r\n`);
  stop();
}, 90_000);
