import { ReleaseListener } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { untilSubscribed } from '../support/waiter-queue.js';

/**
 * A SUBSCRIBE sent while the subscriber connection is still in its handshake (status `connect`):
 * ioredis 5 (from 5.8.2, redis/ioredis#2037) writes it at once, so its own ready check's INFO is
 * then refused in subscriber mode and it drops the connection, subscriptions and all, having
 * answered that SUBSCRIBE. Run on ioredis 5 by the `ioredis5` project.
 */
it('subscribes a channel listened to while the subscriber connection is in its handshake', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const redis = server.client();
  const listener = new ReleaseListener(redis);
  // The listen comes the moment the subscriber connection, a duplicate of `redis`, has connected.
  const duplicate = redis.duplicate.bind(redis);
  let during: Promise<unknown> | undefined;
  redis.duplicate = ((...args: Parameters<typeof duplicate>) => {
    const connection = duplicate(...args);
    connection.once('connect', () => {
      during = listener.listen('during', () => {});
    });
    return connection;
  }) as typeof duplicate;
  await listener.listen('first', () => {});
  expect(during).toBeDefined();
  await during;
  await untilSubscribed(admin, 'first', 1);
  await untilSubscribed(admin, 'during', 1);
  await listener.close();
});
