import { AcquireTimeoutError, createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';

/** The token protocol's commands as the README lists them for an ACL user. */
const TOKEN_COMMANDS =
  'evalsha eval set incr hset pexpire hexists hget hincrby pttl get del hgetall publish subscribe unsubscribe ping time zadd zrange zrem hdel info wait';

/** Makes the user `locker` (password `secret`) anew, limited to the lock keys and channels and to `commands`. */
function grantLocker(admin: Redis, commands: string): Promise<unknown> {
  return admin.call(
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
}

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
  const warnings: Error[] = [];
  const warned = new Promise<void>((resolve) => {
    const listener = (warning: Error) => {
      if ((warning as NodeJS.ErrnoException).code !== 'ERR_LOCK_LEAVE_REFUSED') return;
      warnings.push(warning);
      resolve();
    };
    process.on('warning', listener);
  });
  const lock = await locker.acquire('order:1', { ttl: 5_000 });
  for (const key of ['order:1', 'order:1']) {
    const error = await locker.acquire(key, { wait: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AcquireTimeoutError);
  }
  await Promise.race([
    warned,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error('no ERR_LOCK_LEAVE_REFUSED warning')), 5_000),
    ),
  ]);
  expect(warnings[0]?.message).toMatch(
    /may not run the script by which a waiter that gives up leaves the queue/,
  );
  // Once per process: the second give-up said nothing more.
  await new Promise((resolve) => setImmediate(resolve));
  expect(warnings).toHaveLength(1);
  // Its release would hand the lock to a registration still in the queue, which needs ZREM too.
  await admin.del('{lock:order:1}');
  expect(await lock.release()).toBe('not-owner');
  await locker.close();
  redis.disconnect();
});
