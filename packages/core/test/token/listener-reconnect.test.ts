import { createLocker, ReleaseListener } from '@lock/core';
import { aclUser, proxiedClient, type RedisServer, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { SLOW_POLL, until, untilQueued, untilSubscribed } from '../support/waiter-queue.js';

/** The token protocol's commands as the README lists them for an ACL user. */
const TOKEN_COMMANDS =
  'evalsha eval set incr hset pexpire hexists hget hincrby pttl get del hgetall publish subscribe unsubscribe ping time zadd zrange zrem hdel info';

/**
 * Options whose `retryStrategy` gives up on a lost connection after one reconnection attempt
 * (status `end`), shared by the client's subscriber duplicates; `gaveUp` counts the connections
 * it gave up on.
 */
function givingUp() {
  let gaveUp = 0;
  return {
    redis: {
      retryStrategy: (times: number) => {
        if (times === 1) return 10;
        gaveUp += 1;
        return null;
      },
    },
    gaveUp: () => gaveUp,
  };
}

/** The inbox `lock:<key>`'s queued waiter registers (field STX + owner), once it has. */
async function inboxOf(redis: Redis, key: string): Promise<string> {
  let inbox: string | undefined;
  await until(async () => {
    const fields = await redis.hgetall(`{lock:${key}}:waiters`);
    inbox = Object.entries(fields).find(([field]) => field.startsWith('\u0002'))?.[1];
    return inbox !== undefined;
  }, `an inbox registered on ${key}`);
  return inbox!;
}

/**
 * Whether `waiting` settles within 10 s: with SLOW_POLL and a longer wait, only a release message
 * can hand the lock over by then (the next poll is a minute on).
 */
function settlesSoon(waiting: Promise<unknown>): Promise<string> {
  return Promise.race([
    waiting.then(() => 'acquired'),
    new Promise<string>((resolve) =>
      setTimeout(resolve, 10_000, 'still waiting (for its next poll, a minute on)'),
    ),
  ]);
}

/**
 * Lets every connection through `link` fail until ioredis gave up on the client and its two
 * subscriber duplicates (the lock channels' and the inbox's), then lets connections through again.
 */
async function outlastRetries(
  link: { proxy: { drop(): void; pass(): void } },
  giving: ReturnType<typeof givingUp>,
): Promise<void> {
  const before = giving.gaveUp();
  link.proxy.drop();
  await until(async () => giving.gaveUp() >= before + 3, 'ioredis gave up on the three connections');
  link.proxy.pass();
}

/** A user `narrowed` allowed every key and command, and the channel patterns `channels` only. */
function narrowedUser(server: RedisServer, admin: Redis) {
  const allow = (...channels: string[]) =>
    aclUser(admin, {
      name: 'narrowed',
      password: 'secret',
      reset: true,
      keys: ['*'],
      channels,
      commands: ['@all'],
    });
  const connect = () => {
    const redis = new Redis({ ...server.redisOptions, username: 'narrowed', password: 'secret' });
    redis.on('error', () => {});
    return redis;
  };
  return { allow, connect };
}

/** Resolves once the ACL LOG holds a refusal of `channel`. */
function untilRefused(admin: Redis, channel: string): Promise<void> {
  return until(async () => {
    const entries = (await admin.call('ACL', 'LOG')) as unknown[][];
    return entries.some((entry) => entry.includes('channel') && entry.includes(channel));
  }, `the ACL refused ${channel}`);
}

describe('release listener reconnection', () => {
  it('subscriber connections ioredis gave up on are made again by the next wait, whose release wakes it', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const giving = givingUp();
    await using link = await proxiedClient(server, { redis: giving.redis });
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis: link.redis, retry: SLOW_POLL });
    let held = await holder.acquire('a', { ttl: 30_000 });
    const first = waiter.acquire('a', { ttl: 30_000, wait: 20_000 });
    await untilQueued(admin, 'a', 1);
    await held.release();
    await (await first).release();

    await outlastRetries(link, giving);
    expect(link.redis.status).toBe('end');
    await link.redis.connect();
    held = await holder.acquire('b', { ttl: 30_000 });
    const waiting = waiter.acquire('b', { ttl: 30_000, wait: 60_000 });
    await untilQueued(admin, 'b', 1);
    // Before, both went to the ended connections and failed: the waiter only polled.
    await untilSubscribed(admin, '{lock:b}:released', 1);
    await untilSubscribed(admin, await inboxOf(admin, 'b'), 1);
    await held.release();
    expect(await settlesSoon(waiting)).toBe('acquired');
    const next = await waiting;
    expect(next.fence).toBe(held.fence + 1);
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('a waiter queued while ioredis gave up: once the client is connected again, its key is subscribed again and the release wakes it', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const giving = givingUp();
    await using link = await proxiedClient(server, { redis: giving.redis });
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis: link.redis, retry: SLOW_POLL });
    const held = await holder.acquire('c', { ttl: 60_000 });
    const waiting = waiter.acquire('c', { ttl: 30_000, wait: 60_000 });
    await untilQueued(admin, 'c', 1);
    await untilSubscribed(admin, '{lock:c}:released', 1);

    await outlastRetries(link, giving);
    expect(link.redis.status).toBe('end');
    await link.redis.connect();
    // Nothing of the waiter's asks for it (its next poll is a minute on): the client's reconnection does.
    await untilSubscribed(admin, '{lock:c}:released', 1);
    await held.release();
    expect(await settlesSoon(waiting)).toBe('acquired');
    await (await waiting).release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('a client with autoResubscribe off: the lock’s channel is subscribed again after its connection drops, and a release on it wakes the waiter', async () => {
    await using server = await startRedis();
    const admin = server.client();
    // Not allowed the inboxes: its releases tell waiters on the lock's channel.
    const login = await aclUser(admin, {
      name: 'rel',
      password: 'secret',
      reset: true,
      keys: ['{lock:*'],
      channels: ['{lock:*}:released'],
      commands: TOKEN_COMMANDS.split(' '),
    });
    const holderRedis = new Redis({ ...server.redisOptions, ...login });
    holderRedis.on('error', () => {});
    const redis = new Redis({ ...server.redisOptions, autoResubscribe: false });
    redis.on('error', () => {});
    const holder = createLocker({ redis: holderRedis });
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    let held = await holder.acquire('k', { ttl: 30_000 });
    const first = waiter.acquire('k', { ttl: 30_000, wait: 20_000 });
    await untilQueued(admin, 'k', 1);
    const inbox = await inboxOf(admin, 'k');
    await untilSubscribed(admin, '{lock:k}:released', 1);
    await held.release();
    await (await first).release();

    expect(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')).toBe(2);
    await untilSubscribed(admin, inbox, 1);
    // Within the linger: the locker still counts the key's channel as subscribed.
    held = await holder.acquire('k', { ttl: 30_000 });
    const waiting = waiter.acquire('k', { ttl: 30_000, wait: 60_000 });
    await untilQueued(admin, 'k', 1);
    await untilSubscribed(admin, '{lock:k}:released', 1);
    await held.release();
    expect(await settlesSoon(waiting)).toBe('acquired');
    await (await waiting).release();
    await Promise.all([holder.close(), waiter.close()]);
    holderRedis.disconnect();
    redis.disconnect();
  });

  it('a lock channel the ACL refuses on resubscription refuses no other, and its waiter is still told through the inbox', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const user = narrowedUser(server, admin);
    await user.allow('*');
    const redis = user.connect();
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    const heldX = await holder.acquire('x', { ttl: 60_000 });
    const heldY = await holder.acquire('y', { ttl: 60_000 });
    const waitingX = waiter.acquire('x', { ttl: 30_000, wait: 60_000 });
    const waitingY = waiter.acquire('y', { ttl: 30_000, wait: 60_000 });
    await untilQueued(admin, 'x', 1);
    await untilQueued(admin, 'y', 1);
    const inbox = await inboxOf(admin, 'x');
    await untilSubscribed(admin, '{lock:x}:released', 1);
    await untilSubscribed(admin, '{lock:y}:released', 1);

    // Redis drops the connection subscribed to a channel the user may no longer use.
    await user.allow('{lock:y}:released', inbox);
    await until(
      async () => Number(((await admin.pubsub('NUMSUB', '{lock:x}:released')) as [string, number])[1]) === 0,
      'the refused channel dropped',
    );
    // Before, ioredis sent both in one SUBSCRIBE, refused whole.
    await untilSubscribed(admin, '{lock:y}:released', 1);
    await heldY.release();
    expect(await settlesSoon(waitingY)).toBe('acquired');
    await (await waitingY).release();
    // The refused channel's waiter is still told through the inbox.
    await heldX.release();
    expect(await settlesSoon(waitingX)).toBe('acquired');
    await (await waitingX).release();
    await Promise.all([holder.close(), waiter.close()]);
    redis.disconnect();
  });

  it('a channel refused on resubscription keeps the listeners it has when another listen of it fails: the inbox still reaches them', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const user = narrowedUser(server, admin);
    await user.allow('*');
    const redis = user.connect();
    // Two listeners of one channel on one listener, as backends sharing a subscriber have.
    const listener = new ReleaseListener(redis);
    const channel = '{lock:x}:released';
    const heard: string[] = [];
    await listener.listen(
      channel,
      (message) => heard.push(message),
      (id) => `inbox:${id}`,
    );
    const inbox = listener.inboxFor(channel)!;
    expect(inbox).toMatch(/^inbox:/);

    await user.allow(inbox);
    await untilRefused(admin, channel);
    await expect(listener.listen(channel, () => {})).rejects.toThrow(/NOPERM/);
    // Before, that failure forgot the channel, and with it the first listener.
    expect(listener.inboxFor(channel)).toBe(inbox);
    await admin.publish(inbox, `${channel.length}:${channel}handed`);
    await until(async () => heard.includes('handed'), 'the first listener told through the inbox');
    await listener.close();
    redis.disconnect();
  });

  it('subscriber connections ioredis gave up on while the client stayed connected are made again, and a release wakes the waiter', async () => {
    await using server = await startRedis();
    const admin = server.client();
    // Gives up on every lost connection at once: only the subscriber duplicates are lost here.
    const redis = new Redis({ ...server.redisOptions, retryStrategy: () => null });
    redis.on('error', () => {});
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    const held = await holder.acquire('d', { ttl: 60_000 });
    const waiting = waiter.acquire('d', { ttl: 30_000, wait: 60_000 });
    await untilQueued(admin, 'd', 1);
    const inbox = await inboxOf(admin, 'd');
    await untilSubscribed(admin, '{lock:d}:released', 1);
    await untilSubscribed(admin, inbox, 1);

    expect(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')).toBe(2);
    expect(redis.status).toBe('ready');
    // Before, they waited for the client's next `ready`, which never came.
    await untilSubscribed(admin, '{lock:d}:released', 1);
    await untilSubscribed(admin, inbox, 1);
    await held.release();
    expect(await settlesSoon(waiting)).toBe('acquired');
    await (await waiting).release();
    await Promise.all([holder.close(), waiter.close()]);
    redis.disconnect();
  });
});
