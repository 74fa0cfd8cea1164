import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { grantLocker, TOKEN_COMMANDS } from '../support/acl-user.js';
import { leaveRefusedWarnings } from '../support/leave-refused.js';

it('runs as an ACL user limited to the lock keys, channels and the README’s command list; without INFO it fails and leaves no lock', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const grant = (commands: string) => grantLocker(admin, commands);
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

it('warns once when the ACL refuses the script by which a waiter that gives up leaves the queue', async () => {
  await using server = await startRedis();
  const admin = server.client();
  // Without ZREM the lock is taken and waited for as usual; only leaving the queue is refused.
  await grantLocker(admin, TOKEN_COMMANDS.replace(' zrem', ''));
  const redis = new Redis({ ...server.redisOptions, username: 'locker', password: 'secret' });
  redis.on('error', () => {});
  const locker = createLocker({ redis });
  const lock = await locker.acquire('order:1', { ttl: 5_000 });
  const warnings = await leaveRefusedWarnings(locker, 'order:1');
  // Once per process, however many give-ups.
  expect(warnings).toHaveLength(1);
  expect(warnings[0]?.message).toMatch(
    /may not run the script by which a waiter that gives up leaves the queue/,
  );
  // Its release would hand the lock to a registration still in the queue, which needs ZREM too.
  await admin.del('{lock:order:1}');
  expect(await lock.release()).toBe('not-owner');
  await locker.close();
  redis.disconnect();
});
