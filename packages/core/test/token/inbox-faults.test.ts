import { createLocker, tokenProtocol } from '@lock/core';
import { aclUser, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { SLOW_POLL, until, untilSubscribed } from '../support/waiter-queue.js';

/** The token protocol's commands as the README lists them for an ACL user. */
const TOKEN_COMMANDS =
  'evalsha eval set incr hset pexpire hexists hget hincrby pttl get del hgetall publish subscribe unsubscribe ping time zadd zrange zrem hdel info';

/** Makes `user` (password `secret`) anew: the lock keys, the channel patterns `channels`, the token commands. */
function setUser(admin: Redis, user: string, channels: readonly string[]) {
  return aclUser(admin, {
    name: user,
    password: 'secret',
    reset: true,
    keys: ['{lock:*'],
    channels,
    commands: TOKEN_COMMANDS.split(' '),
  });
}

/** The inboxes registered for `lock:<key>`'s waiters (fields STX + owner). */
async function inboxes(redis: Redis, key: string): Promise<string[]> {
  const fields = await redis.hgetall(`{lock:${key}}:waiters`);
  return Object.entries(fields)
    .filter(([field]) => field.startsWith('\u0002'))
    .map(([, inbox]) => inbox);
}

/** The inbox channels the ACL refused so far, each with how often (ACL LOG counts repeats). */
async function refusedInboxes(admin: Redis): Promise<Map<string, number>> {
  const refused = new Map<string, number>();
  for (const entry of (await admin.call('ACL', 'LOG')) as (string | number)[][]) {
    const field = (name: string) => entry[entry.indexOf(name) + 1];
    const object = String(field('object'));
    if (field('reason') === 'channel' && object.includes(':inbox:')) {
      refused.set(object, (refused.get(object) ?? 0) + Number(field('count')));
    }
  }
  return refused;
}

describe('inboxes under faults', () => {
  it('a releaser the ACL does not let publish to the waiter’s inbox releases, and tells the waiter on the lock’s channel', async () => {
    await using server = await startRedis();
    const admin = server.client();
    // Allowed the lock channels of its own namespace only: not an inbox named after another key.
    const login = await setUser(admin, 'orders', ['{lock:orders:*}:released']);
    const releaserRedis = new Redis({ ...server.redisOptions, ...login });
    releaserRedis.on('error', () => {});
    const releaser = createLocker({ redis: releaserRedis });
    // Polls once a minute: only a message can hand it the lock within the test.
    const waiter = createLocker({ redis: server.client(), retry: SLOW_POLL });
    const holder = createLocker({ redis: server.client() });
    // The waiter's first wait names its inbox after another namespace's key.
    const other = await holder.acquire('other:1', { ttl: 30_000 });
    const first = waiter.acquire('other:1', { ttl: 30_000, wait: 20_000 });
    await until(async () => (await inboxes(admin, 'other:1')).length === 1, 'the inbox registered');
    await other.release();
    await (await first).release();

    const held = await releaser.acquire('orders:1', { ttl: 30_000 });
    const waiting = waiter.acquire('orders:1', { ttl: 30_000, wait: 20_000 });
    await until(async () => (await inboxes(admin, 'orders:1')).length === 1, 'the inbox registered');
    const [inbox] = await inboxes(admin, 'orders:1');
    expect(inbox).toMatch(/^\{lock:other:1\}:inbox:/);
    await held.release();
    const next = await waiting;
    expect(next.fence).toBe(held.fence + 1);
    await next.release();
    await Promise.all([releaser.close(), holder.close(), waiter.close()]);
    releaserRedis.disconnect();
  });

  it('a registration naming an inbox nobody listens on (its subscriber reconnecting): the waiter is told on the lock’s channel', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis: server.client(), retry: SLOW_POLL });
    const held = await holder.acquire('unheard', { ttl: 30_000 });
    const waiting = waiter.acquire('unheard', { ttl: 30_000, wait: 20_000 });
    await until(async () => (await inboxes(admin, 'unheard')).length === 1, 'the inbox registered');
    const [field] = Object.keys(await admin.hgetall('{lock:unheard}:waiters')).filter((name) =>
      name.startsWith('\u0002'),
    );
    await admin.hset('{lock:unheard}:waiters', field!, '{lock:unheard}:inbox:gone');
    // On the channel alone: a pattern subscriber of inboxes would hear the dead inbox.
    const onKeyChannel: string[] = [];
    const subscriber = server.client();
    subscriber.on('message', (_channel: string, message: string) => onKeyChannel.push(message));
    await subscriber.subscribe('{lock:unheard}:released');
    await held.release();
    // Told before its deadline's last attempt, which would take the lock as well.
    await until(async () => onKeyChannel.length === 1, 'the grant on the lock’s channel');
    const next = await waiting;
    expect(tokenProtocol().grantIn!(onKeyChannel[0]!)).toMatchObject({ owner: next.owner });
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('a client with autoResubscribe off: the inbox is subscribed again after its connection drops, and serves the next hand-off', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const holder = createLocker({ redis: server.client() });
    const redis = new Redis({ ...server.redisOptions, autoResubscribe: false });
    redis.on('error', () => {});
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    let held = await holder.acquire('resub', { ttl: 30_000 });
    const first = waiter.acquire('resub', { ttl: 30_000, wait: 20_000 });
    await until(async () => (await inboxes(admin, 'resub')).length === 1, 'the inbox registered');
    const [inbox] = await inboxes(admin, 'resub');
    await held.release();
    await (await first).release();

    await untilSubscribed(admin, inbox!, 1);
    expect(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')).toBeGreaterThanOrEqual(1);
    // The inbox, not ioredis, subscribes again.
    await untilSubscribed(admin, inbox!, 1);
    held = await holder.acquire('resub', { ttl: 30_000 });
    const waiting = waiter.acquire('resub', { ttl: 30_000, wait: 20_000 });
    await until(async () => (await inboxes(admin, 'resub')).length === 1, 'the inbox registered again');
    expect(await inboxes(admin, 'resub')).toEqual([inbox]);
    await held.release();
    const next = await waiting;
    expect(next.fence).toBe(held.fence + 1);
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
    redis.disconnect();
  });

  it('an ACL narrowed at runtime to the lock channels: the inbox is given up, the lock’s channel still wakes the waiter', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const login = await setUser(admin, 'narrowed', ['{lock:*']);
    const redis = new Redis({ ...server.redisOptions, ...login });
    redis.on('error', () => {});
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    try {
      let held = await holder.acquire('narrow', { ttl: 30_000 });
      const first = waiter.acquire('narrow', { ttl: 30_000, wait: 20_000 });
      await until(async () => (await inboxes(admin, 'narrow')).length === 1, 'the inbox registered');
      const [inbox] = await inboxes(admin, 'narrow');
      await held.release();
      await (await first).release();

      // Redis drops the subscribers of channels the user may no longer use.
      await setUser(admin, 'narrowed', ['{lock:*}:released']);
      await until(async () => (await refusedInboxes(admin)).has(inbox!), 'the inbox refused');
      held = await holder.acquire('narrow', { ttl: 30_000 });
      const waiting = waiter.acquire('narrow', { ttl: 30_000, wait: 20_000 });
      await until(
        async () => Object.keys(await admin.hgetall('{lock:narrow}:waiters')).length > 0,
        'the waiter queued',
      );
      expect(await inboxes(admin, 'narrow')).toEqual([]);
      await held.release();
      const next = await waiting;
      expect(next.fence).toBe(held.fence + 1);
      await next.release();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await Promise.all([holder.close(), waiter.close()]);
      redis.disconnect();
    }
  });

  it('an inbox the ACL refuses is asked for once, not again with each key waited for', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const login = await setUser(admin, 'plain', ['{lock:*}:released']);
    const redis = new Redis({ ...server.redisOptions, ...login });
    redis.on('error', () => {});
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    for (const key of ['refused:1', 'refused:2', 'refused:3']) {
      const held = await holder.acquire(key, { ttl: 30_000 });
      const waiting = waiter.acquire(key, { ttl: 30_000, wait: 20_000 });
      await until(
        async () => Object.keys(await admin.hgetall(`{lock:${key}}:waiters`)).length > 0,
        'the waiter queued',
      );
      await until(async () => (await refusedInboxes(admin)).size > 0, 'the inbox refused');
      await held.release();
      await (await waiting).release();
    }
    const refused = await refusedInboxes(admin);
    expect([...refused.values()]).toEqual([1]);
    await Promise.all([holder.close(), waiter.close()]);
    redis.disconnect();
  });
});
