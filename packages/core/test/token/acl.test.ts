import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';

/** The token protocol's commands as the README lists them for an ACL user. */
const TOKEN_COMMANDS =
  'evalsha eval set incr hset pexpire hexists hget hincrby pttl get del hgetall publish subscribe unsubscribe ping time zadd zrange zrem hdel info wait';

it('runs as an ACL user limited to the lock keys, channels and the README’s command list; without INFO it fails and leaves no lock', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const grant = (commands: string) =>
    admin.call(
      'ACL',
      'SETUSER',
      'locker',
      'reset',
      'on',
      '>secret',
      '~{lock:*',
      '&{lock:*',
      ...commands.split(' ').map((command) => `+${command}`),
    );
  await grant(TOKEN_COMMANDS);
  const redis = new Redis({ ...server.redisOptions, username: 'locker', password: 'secret' });
  redis.on('error', () => {});
  const locker = createLocker({ redis });
  const lock = await locker.acquire('order:1', { ttl: 5_000 });
  const waiting = locker.acquire('order:1', { ttl: 5_000, wait: 5_000 });
  expect((await locker.inspect('order:1')).holds).toBe(1);
  await lock.release();
  const next = await waiting;
  expect(next.fence).toBeGreaterThan(lock.fence);
  await next.release();
  await locker.close();

  await grant(TOKEN_COMMANDS.replace(' info', ''));
  const restricted = createLocker({ redis });
  const error = await restricted.acquire('order:2', { wait: 0 }).catch((e: unknown) => e);
  expect((error as Error).message).toMatch(/NOPERM/);
  expect(await admin.exists('{lock:order:2}')).toBe(0);
  await restricted.close();
  redis.disconnect();
});
