import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, type Lock, type Locker, tokenProtocol } from '@lock/core';
import { startCluster, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { checkHistory, type Interval } from '../support/history.js';
import {
  countScripts,
  registrations,
  SLOW_POLL,
  until,
  untilQueued,
  untilSubscribed,
} from '../support/waiter-queue.js';

/** The inbox each queued owner of `lock:<key>` registered (field STX + owner). */
async function inboxes(redis: Redis, key: string): Promise<Record<string, string>> {
  const fields = await redis.hgetall(`{lock:${key}}:waiters`);
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([field]) => field.startsWith('\u0002'))
      .map(([field, inbox]) => [field.slice(1), inbox]),
  );
}

/** Every message published on `channel` itself (not those for it on inboxes), as they come. */
async function listenOn(redis: Redis, channel: string): Promise<string[]> {
  const heard: string[] = [];
  redis.on('message', (_channel: string, message: string) => heard.push(message));
  await redis.subscribe(channel);
  return heard;
}

/** Every message published on a channel matching `pattern`, with its channel, as they come. */
async function listenPattern(redis: Redis, pattern: string): Promise<[string, string][]> {
  const heard: [string, string][] = [];
  redis.on('pmessage', (_pattern: string, channel: string, message: string) =>
    heard.push([channel, message]),
  );
  await redis.psubscribe(pattern);
  return heard;
}

/** Keys of `lock:<key>` with no TTL, and fields of its registrations left over. */
async function leftovers(redis: Redis, key: string) {
  const names = await redis.keys(`{lock:${key}}*`);
  const ttls = await Promise.all(names.map((name) => redis.pttl(name)));
  return {
    withoutTtl: names.filter((_, i) => ttls[i] === -1),
    registrations: await redis.hgetall(`{lock:${key}}:waiters`),
  };
}

describe('a hand-off wakes only the waiter’s process (inboxes)', () => {
  it('a grant to a waiter of another locker goes to that locker’s inbox, not on the lock’s channel', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const channel = '{lock:targeted}:released';
    const onKeyChannel = await listenOn(server.client(), channel);
    const onInboxes = await listenPattern(server.client(), '*:inbox:*');
    const holder = createLocker({ redis: server.client() });
    // Two clients, two release listeners: two processes. Each hand-off goes from one to the other.
    const clients = [server.client(), server.client()];
    const sent = clients.map((client) => countScripts(client));
    const lockers = clients.map((redis) => createLocker({ redis, retry: SLOW_POLL }));
    const attempts = new Map<string, number>();
    const onAcquire = (message: unknown) => {
      const event = message as { key: string; owner: string; attempts: number };
      if (event.key === 'targeted') attempts.set(event.owner, event.attempts);
    };
    subscribe('lock:acquire', onAcquire);
    try {
      const first = await holder.acquire('targeted', { ttl: 30_000 });
      const arrivals: { locker: number; handle: Promise<Lock> }[] = [];
      for (let i = 0; i < 6; i++) {
        const locker = i % 2;
        const before = sent[locker]!();
        arrivals.push({
          locker,
          handle: lockers[locker]!.acquire('targeted', { ttl: 30_000, wait: 20_000 }),
        });
        // Queued in this order (the lockers' connections are not ordered with each other)...
        await untilQueued(admin, 'targeted', i + 1);
        // ...and done: the first waiter of a locker stamps the fence counter, is refused, and tries
        // again right after subscribing; the others are refused once.
        await until(async () => sent[locker]!() === before + (i < 2 ? 3 : 1), `waiter ${i} queued`);
      }
      const registered = await inboxes(admin, 'targeted');

      await first.release();
      const served: Lock[] = [];
      for (const arrival of arrivals) {
        const lock = await arrival.handle;
        served.push(lock);
        await lock.release();
      }
      // Each waiter in arrival order, handed the lock with no attempt past its queueing ones.
      expect(served.map((lock) => lock.fence)).toEqual(served.map((_, i) => first.fence + 1 + i));
      const owners = served.map((lock) => lock.owner);
      expect(owners.map((owner) => attempts.get(owner))).toEqual([2, 2, 1, 1, 1, 1]);
      await until(async () => onInboxes.length + onKeyChannel.length === 6, 'the six grants published');
      // Nothing for them on the lock's channel, where a waiter of the other locker would wake.
      expect(onKeyChannel).toEqual([]);
      // Each grant on the inbox of the locker whose waiter it was, framed with the lock's channel.
      expect(new Set(Object.values(registered)).size).toBe(2);
      const frame = `${Buffer.byteLength(channel)}:${channel}`;
      const grants = onInboxes.map(([inbox, message]) => {
        expect(message.startsWith(`${frame}granted:`)).toBe(true);
        return { inbox, owner: tokenProtocol().grantIn!(message.slice(frame.length))!.owner };
      });
      expect(grants).toEqual(owners.map((owner) => ({ inbox: registered[owner], owner })));
      expect(arrivals.map((arrival) => arrival.locker)).toEqual([0, 1, 0, 1, 0, 1]);
      expect(new Set(grants.filter((_, i) => i % 2 === 0).map((grant) => grant.inbox)).size).toBe(1);
      expect(await leftovers(admin, 'targeted')).toEqual({ withoutTtl: [], registrations: {} });
    } finally {
      unsubscribe('lock:acquire', onAcquire);
      await Promise.all([holder, ...lockers].map((locker) => locker.close()));
    }
  });

  it('keys and owners of any characters: the inbox message names the lock’s channel by its byte length', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const key = 'straße:☃:1';
    const onKeyChannel = await listenOn(server.client(), `{lock:${key}}:released`);
    const holder = createLocker({ redis: server.client() });
    // Polls once a minute: only the inbox message can reach its waiters within the test.
    const waiter = createLocker({ redis: server.client(), retry: SLOW_POLL });
    const first = await holder.acquire(key, { ttl: 30_000 });
    // A fresh owner is handed the lock; an explicit one is named.
    const granted = waiter.acquire(key, { ttl: 30_000, wait: 20_000 });
    await until(async () => Object.keys(await inboxes(admin, key)).length === 1, 'the first inbox');
    const named = waiter.acquire(key, { owner: 'ö:w:☃', ttl: 30_000, wait: 20_000 });
    await until(async () => Object.keys(await inboxes(admin, key)).length === 2, 'the second inbox');
    await first.release();
    const handed = await granted;
    await handed.release();
    expect((await named).owner).toBe('ö:w:☃');
    await (await named).release();
    expect(onKeyChannel).toEqual([]);
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('two lockers contending for one key: no overlap, strictly increasing fences, every waiter served', async () => {
    await using server = await startRedis();
    const lockers: Locker[] = [
      createLocker({ redis: server.client() }),
      createLocker({ redis: server.client() }),
    ];
    const intervals: Interval[] = [];
    const worker = async (id: number, locker: Locker) => {
      for (let i = 0; i < 40; i++) {
        const lock = await locker.acquire('contended', { ttl: 10_000, wait: 30_000 });
        const start = process.hrtime.bigint();
        await new Promise((resolve) => setImmediate(resolve));
        const end = process.hrtime.bigint();
        intervals.push({ worker: id, start, end, fence: lock.fence });
        await lock.release();
      }
    };
    await Promise.all(Array.from({ length: 10 }, (_, id) => worker(id, lockers[id % 2]!)));
    expect(checkHistory(intervals)).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: 400 });
    const admin = server.client();
    expect(await leftovers(admin, 'contended')).toEqual({ withoutTtl: [], registrations: {} });
    await Promise.all(lockers.map((locker) => locker.close()));
  }, 60_000);

  it('an aborted waiter leaves the queue with its inbox; a crashed one is skipped with it once its lease lapses', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const holder = createLocker({ redis: server.client() });
    const locker = createLocker({ redis: server.client(), retry: SLOW_POLL });
    const first = await holder.acquire('gone', { ttl: 30_000 });
    const controller = new AbortController();
    const aborted = locker
      .acquire('gone', { wait: 20_000, signal: controller.signal })
      .catch((error: unknown) => error);
    await until(async () => Object.keys(await inboxes(redis, 'gone')).length === 1, 'the inbox registered');
    controller.abort();
    expect(await aborted).toHaveProperty('name', 'AbortError');
    await until(async () => (await redis.exists('{lock:gone}:waiters')) === 0, 'the abort to leave');
    expect(await leftovers(redis, 'gone')).toEqual({ withoutTtl: [], registrations: {} });

    // A waiter that registered its inbox and crashed: a registration nobody renews, for 1 s.
    const crashed = await tokenProtocol().acquire(redis, 'lock:gone', 'crashed', 30_000, {
      wait: 20_000,
      fresh: true,
      queueLease: 1_000,
      grantLease: 30_000,
      inbox: '{lock:gone}:inbox:crashed',
    });
    expect(crashed.acquired).toBe(false);
    const waiting = locker.acquire('gone', { ttl: 5_000, wait: 20_000 });
    await until(
      async () => Object.keys(await inboxes(redis, 'gone')).length === 2,
      'both inboxes registered',
    );
    const lapses = (await registrations(redis, 'gone')).crashed!;
    for (;;) {
      const [seconds, micros] = (await redis.time()).map(Number) as [number, number];
      if (seconds * 1_000 + micros / 1_000 > lapses) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await first.release();
    const next = await waiting;
    expect(next.fence).toBe(first.fence + 1);
    // Skipped, and its inbox with it.
    expect(await leftovers(redis, 'gone')).toEqual({ withoutTtl: [], registrations: {} });
    await next.release();
    await Promise.all([holder.close(), locker.close()]);
  });

  it('a waiter registered without an inbox (an earlier version) is woken on the lock’s channel; one with an inbox still hears an earlier releaser there', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const onKeyChannel = await listenOn(server.client(), '{lock:mixed}:released');
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis: server.client(), retry: SLOW_POLL });
    const first = await holder.acquire('mixed', { ttl: 30_000 });
    const waiting = waiter.acquire('mixed', { ttl: 30_000, wait: 20_000 });
    await until(async () => Object.keys(await inboxes(admin, 'mixed')).length === 1, 'the inbox registered');
    const [owner] = Object.keys(await inboxes(admin, 'mixed'));
    // As an earlier version registers it: no inbox.
    await admin.hdel('{lock:mixed}:waiters', `\u0002${owner}`);
    await first.release();
    const handed = await waiting;
    expect(handed.owner).toBe(owner);
    await until(async () => onKeyChannel.length === 1, 'the grant on the lock’s channel');
    expect(tokenProtocol().grantIn!(onKeyChannel[0]!)).toMatchObject({ owner, fence: handed.fence });

    await handed.release();
    // An earlier version's holder, whose release frees the lock and names the waiter on the
    // lock's channel only.
    await admin.hset('{lock:mixed}', 'earlier', 1, '', 1_000);
    await admin.pexpire('{lock:mixed}', 30_000);
    const next = waiter.acquire('mixed', { owner: 'named', ttl: 30_000, wait: 20_000 });
    await until(async () => (await inboxes(admin, 'mixed')).named !== undefined, 'the inbox registered');
    await admin.del('{lock:mixed}');
    await admin.publish('{lock:mixed}:released', 'released:named');
    const named = await next;
    expect(named.owner).toBe('named');
    await named.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('a waiter whose subscriber connection is killed while it is queued still gets the lock', async () => {
    await using server = await startRedis();
    const admin = server.client();
    const holder = createLocker({ redis: server.client() });
    const waiter = createLocker({ redis: server.client(), retry: { base: 200, max: 500, jitter: 0 } });
    const first = await holder.acquire('killed', { ttl: 30_000 });
    const waiting = waiter.acquire('killed', { ttl: 30_000, wait: 20_000 });
    await until(async () => Object.keys(await inboxes(admin, 'killed')).length === 1, 'the inbox registered');
    const [inbox] = Object.values(await inboxes(admin, 'killed'));
    await untilSubscribed(admin, inbox!, 1);
    // The waiter's subscribers (the lock channels', the inbox's) are the only ones: the grant is
    // published while they are gone.
    expect(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')).toBe(2);
    await first.release();
    const next = await waiting;
    expect(next.fence).toBe(first.fence + 1);
    // The locker subscribes its inbox again: it serves the next hand-offs.
    await untilSubscribed(admin, inbox!, 1);
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('with sharded pub/sub (a Redis 7 cluster) no inbox is registered: the grant comes on the lock’s channel', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    const admin = cluster.client() as unknown as Redis;
    const holder = createLocker({ redis: cluster.client() });
    const waiterRedis = cluster.client();
    const sent = countScripts(waiterRedis as unknown as Redis);
    const waiter = createLocker({ redis: waiterRedis, retry: SLOW_POLL });
    const first = await holder.acquire('sharded', { ttl: 30_000 });
    const waiting = waiter.acquire('sharded', { ttl: 30_000, wait: 20_000 });
    await untilQueued(admin, 'sharded', 1);
    // Queued, subscribed, and queued again by its retry right after subscribing.
    await until(async () => sent() === 2, 'the waiter’s retry');
    expect(
      Object.keys(await admin.hgetall('{lock:sharded}:waiters')).filter((field) =>
        field.startsWith('\u0002'),
      ),
    ).toEqual([]);
    await first.release();
    expect((await waiting).fence).toBe(first.fence + 1);
    await Promise.all([holder.close(), waiter.close()]);
  }, 60_000);
});
