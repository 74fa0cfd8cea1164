import { createLocker, legacyProtocol } from '@lock/core';
import { aclUser, type RedisServer, startRedis, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { listen } from '../support/waiter-queue.js';

/**
 * Redis keeps what a script wrote before a command the ACL refuses. A user allowed HSET but not
 * PEXPIRE must therefore be refused before the first write: otherwise the lock hash (or a legacy
 * owner record, or a waiter queue) stays without a TTL, held by nobody, until deleted by hand.
 */
const TOKEN_COMMANDS =
  'evalsha eval set incr hset pexpire hexists hget hincrby pttl get del hgetall publish subscribe unsubscribe ping time zadd zrange zrem hdel info wait';
const LEGACY_COMMANDS =
  'evalsha eval set get del type pttl pexpire pexpiretime pexpireat time incr hset hmget hincrby hlen publish subscribe unsubscribe ping info wait';

async function userWith(server: RedisServer, name: string, commands: string): Promise<Redis> {
  const login = await aclUser(server, {
    name,
    password: 'secret',
    reset: true,
    keys: ['*'],
    channels: ['*'],
    commands: commands.split(' '),
  });
  const redis = new Redis({ ...server.redisOptions, ...login });
  redis.on('error', () => {});
  return redis;
}

/** The server's keys (matching `pattern`) and their PTTLs. */
async function keysWithTtl(server: RedisServer, pattern = '*'): Promise<Record<string, number>> {
  const admin = server.client();
  const keys = await admin.keys(pattern);
  const ttls = await Promise.all(keys.map((key) => admin.pttl(key)));
  admin.disconnect();
  return Object.fromEntries(keys.map((key, i) => [key, ttls[i]!]));
}

it('token: a user refused PEXPIRE gets NOPERM and leaves no lock and no queue behind', async () => {
  await using server = await startRedis();
  const before = await keysWithTtl(server);
  const redis = await userWith(server, 'no-expiry', TOKEN_COMMANDS.replace(' pexpire', ''));
  const locker = createLocker({ redis, replication: false });
  const free = await locker.acquire('order:1', { wait: 0 }).catch((error: unknown) => error);
  expect(String(free)).toMatch(/NOPERM.*PEXPIRE/);
  expect(await keysWithTtl(server)).toEqual(before);

  // Held by a full user: the refused user's waiting attempt must not queue without a TTL either.
  const full = createLocker({ redis: server.client(), replication: false });
  const held = await full.acquire('order:2', { ttl: 10_000 });
  const waiting = await locker.acquire('order:2', { wait: 200 }).catch((error: unknown) => error);
  expect(String(waiting)).toMatch(/NOPERM.*PEXPIRE/);
  const left = await keysWithTtl(server, '{lock:order:2}*');
  expect(Object.keys(left)).toEqual(['{lock:order:2}']);
  expect(left['{lock:order:2}']).toBeGreaterThan(0);
  await held.release();
  await full.close();
  await locker.close();
  redis.disconnect();
});

it('token: a release whose user lost PEXPIRE names the next waiter instead of granting it a lock without TTL', async () => {
  await using server = await startRedis();
  const redis = await userWith(server, 'holder', TOKEN_COMMANDS);
  const holder = createLocker({ redis, replication: false });
  const other = createLocker({ redis: server.client(), replication: false });
  const held = await holder.acquire('order:3', { ttl: 10_000 });
  const waiting = other.acquire('order:3', { ttl: 10_000, wait: 10_000 });
  const admin = server.client();
  const listener = server.client();
  const messages = await listen(listener, '{lock:order:3}:released');
  await waitFor('the waiter queued', async () => (await admin.exists('{lock:order:3}:queue')) === 1);
  await admin.call('ACL', 'SETUSER', 'holder', '-pexpire');
  await held.release();
  const next = await waiting;
  await waitFor('the release message', async () => messages.length > 0);
  // Named, not granted: the waiter wrote its own lock, with its TTL.
  expect(messages).toEqual([`released:${next.owner}`]);
  expect(await admin.pttl('{lock:order:3}')).toBeGreaterThan(0);
  listener.disconnect();
  await next.release();
  await holder.close();
  await other.close();
  admin.disconnect();
  redis.disconnect();
});

it('legacy: a user refused PEXPIRE gets NOPERM and leaves no owner record behind', async () => {
  await using server = await startRedis();
  const before = await keysWithTtl(server);
  const redis = await userWith(server, 'no-expiry', LEGACY_COMMANDS.replace(' pexpire ', ' '));
  const locker = createLocker({
    redis,
    protocol: legacyProtocol({ unit: 's' }),
    prefix: '',
    replication: false,
  });
  const refused = await locker.acquire('order:4', { wait: 0 }).catch((error: unknown) => error);
  expect(String(refused)).toMatch(/NOPERM.*PEXPIRE/);
  expect(await keysWithTtl(server)).toEqual(before);
  await locker.close();
  redis.disconnect();
});

it('token: a waiter refused PEXPIRE on the queue keys alone gets NOPERM and is not queued', async () => {
  await using server = await startRedis();
  const admin = server.client();
  // A Redis 7 selector: PEXPIRE allowed on the lock key, not on its queue and registrations.
  await admin.call(
    'ACL',
    'SETUSER',
    'lock-only',
    'reset',
    'on',
    '>secret',
    '~*',
    '&*',
    '+@all',
    '-pexpire',
    '(+pexpire ~{lock:order:5})',
  );
  const redis = new Redis({ ...server.redisOptions, username: 'lock-only', password: 'secret' });
  redis.on('error', () => {});
  const locker = createLocker({ redis, replication: false });
  const full = createLocker({ redis: server.client(), replication: false });
  const held = await full.acquire('order:5', { ttl: 10_000 });
  const refused = await locker.acquire('order:5', { wait: 200 }).catch((error: unknown) => error);
  expect(String(refused)).toMatch(/NOPERM.*PEXPIRE/);
  expect(Object.keys(await keysWithTtl(server, '{lock:order:5}*'))).toEqual(['{lock:order:5}']);
  await held.release();
  await Promise.all([full.close(), locker.close()]);
  admin.disconnect();
  redis.disconnect();
});
