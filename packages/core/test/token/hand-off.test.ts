import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type AcquireEvent, createLocker, type HandedGrant, tokenProtocol } from '@lock/core';
import { startCluster, startProxy, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startHolder } from '../faults/support/processes.js';
import {
  countScripts,
  listen,
  queueCrashedWaiter,
  registrations,
  SLOW_POLL,
  until,
  untilQueued,
  untilSubscribed,
} from '../support/waiter-queue.js';

const LOCK = '{lock:handed}';

/** A refused attempt that queues `owner` as a fresh waiter, registering a direct grant of `grantLease` ms (0: none). */
function queue(redis: Redis, owner: string, grantLease: number) {
  return tokenProtocol().acquire(redis, 'lock:handed', owner, 30_000, {
    wait: 10_000,
    fresh: true,
    queueLease: 5_000,
    grantLease,
  });
}

describe('the token protocol’s direct hand-off', () => {
  it('a release writes the lock for the first live waiter with terms, with the next fence, and reports it', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const messages = await listen(server.client(), `${LOCK}:released`);
    const protocol = tokenProtocol();
    const held = await protocol.acquire(redis, 'lock:handed', 'holder', 30_000, { wait: 0, fresh: true });
    expect(held).toMatchObject({ acquired: true, fence: 1 });
    const refused = await queue(redis, 'first', 4_000);
    expect(refused).toMatchObject({ acquired: false, serverTime: expect.any(Number) });
    await queue(redis, 'second', 0);

    const handed: HandedGrant[] = [];
    const onGrant = (grant: HandedGrant) => handed.push(grant);
    expect(await protocol.release(redis, 'lock:handed', 'holder', 'holder', onGrant)).toBe('released');
    expect(await redis.hgetall(LOCK)).toEqual({ first: '1', '': '2' });
    expect(await redis.pttl(LOCK)).toBeGreaterThan(3_000);
    expect(await redis.pttl(LOCK)).toBeLessThanOrEqual(4_000);
    // Out of the queue, terms and all; the waiter without terms keeps its place.
    expect(await redis.zrange(`${LOCK}:queue`, '0', '-1')).toEqual(['second']);
    expect(Object.keys(await redis.hgetall(`${LOCK}:waiters`))).toEqual(['second']);
    await until(async () => messages.length === 1, 'the grant message');
    const grant = protocol.grantIn?.(messages[0]!);
    expect(grant).toEqual({ owner: 'first', token: 'first', fence: 2, lease: 4_000, at: expect.any(Number) });
    expect(grant!.at).toBeGreaterThanOrEqual((refused as { serverTime: number }).serverTime);
    // The releasing client was told of the grant by the reply, before any message.
    expect(handed).toEqual([grant]);

    // A waiter that registered no terms (its grants need WAIT, or a quorum) is only named.
    expect(await protocol.release(redis, 'lock:handed', 'first', 'first', onGrant)).toBe('released');
    expect(handed).toHaveLength(1);
    expect(await redis.exists(LOCK)).toBe(0);
    await until(async () => messages.length === 2, 'the naming message');
    expect(messages[1]).toBe('released:second');
    expect(protocol.addressee?.(messages[1]!)).toBe('second');
    expect(protocol.grantIn?.(messages[1]!)).toBeUndefined();
  });

  it('a fresh waiter that gives up after a grant it never used hands the lock on; any other owner leaves it', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const messages = await listen(server.client(), `${LOCK}:released`);
    const protocol = tokenProtocol();
    await protocol.acquire(redis, 'lock:handed', 'holder', 30_000, { wait: 0, fresh: true });
    await queue(redis, 'gone', 30_000);
    await queue(redis, 'next', 30_000);
    await protocol.release(redis, 'lock:handed', 'holder', 'holder');
    expect(await redis.hget(LOCK, 'gone')).toBe('1');

    await protocol.abandon?.(redis, 'lock:handed', 'gone', { wait: 10_000, fresh: true });
    expect(await redis.hgetall(LOCK)).toEqual({ next: '1', '': '3' });
    await until(async () => messages.length === 2, 'the second grant');
    expect(protocol.grantIn?.(messages[1]!)).toMatchObject({ owner: 'next', fence: 3 });

    // An owner that is not fresh may hold the lock through another call: its abandon only leaves the queue.
    await protocol.abandon?.(redis, 'lock:handed', 'next', { wait: 10_000, fresh: false });
    expect(await redis.hgetall(LOCK)).toEqual({ next: '1', '': '3' });
  });

  it('hands the lock to a waiter of another locker with no attempt of its own, on a cluster too', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    const redis = cluster.client();
    const holder = createLocker({ redis });
    const waiter = createLocker({ redis, retry: SLOW_POLL });
    const events: AcquireEvent[] = [];
    const onAcquire = (message: unknown) => events.push(message as AcquireEvent);
    subscribe('lock:acquire', onAcquire);
    try {
      const first = await holder.acquire('sharded', { ttl: 30_000 });
      const waiting = waiter.acquire('sharded', { ttl: 30_000, wait: 20_000 });
      await untilQueued(redis as unknown as Redis, 'sharded', 1);
      await until(
        async () =>
          Number(
            (
              (await cluster.client().call('PUBSUB', 'SHARDNUMSUB', '{lock:sharded}:released')) as unknown[]
            )[1],
          ) > 0,
        'the waiter subscribed',
      );
      // The waiter's retry right after subscribing has been answered: the release hands it the lock.
      await until(async () => events.length === 1, 'the holder’s event');
      await first.release();
      const next = await waiting;
      expect(next.fence).toBe(first.fence + 1);
      expect(events[1]).toMatchObject({ owner: next.owner, attempts: 2, handoff: true });
      expect(await redis.hget('{lock:sharded}', next.owner)).toBe('1');
      await next.release();
    } finally {
      unsubscribe('lock:acquire', onAcquire);
      await holder.close();
      await waiter.close();
    }
  }, 60_000);

  it('a waiter of the releasing locker takes its grant from the release’s reply: no message needed', async () => {
    await using server = await startRedis();
    // The subscriber connection (the duplicate of the locker's client) goes through a link the
    // test cuts; dropped, it refuses every reconnection, so the grant's message reaches nobody.
    await using subscriberLink = await startProxy({ target: server });
    const admin = server.client();
    const redis = server.client();
    redis.duplicate = (override) =>
      new Redis({ ...redis.options, ...override, ...subscriberLink.redisOptions });
    const sent = countScripts(redis);
    // Polls once a minute: without its message, only the release's reply can hand the waiter the lock in time.
    const locker = createLocker({ redis, retry: SLOW_POLL });
    const events: AcquireEvent[] = [];
    const onAcquire = (message: unknown) => events.push(message as AcquireEvent);
    subscribe('lock:acquire', onAcquire);
    try {
      const first = await locker.acquire('same', { ttl: 30_000 });
      const before = sent();
      const waiting = locker.acquire('same', { ttl: 30_000, wait: 20_000 });
      waiting.catch(() => {});
      await untilQueued(admin, 'same', 1);
      await untilSubscribed(admin, '{lock:same}:released', 1);
      // Its retry right after subscribing has been answered: it sleeps.
      await until(async () => sent() === before + 2, 'the retry after subscribing');
      await redis.ping();
      subscriberLink.drop();
      await until(
        async () =>
          Number(((await admin.pubsub('NUMSUB', '{lock:same}:released')) as [string, number])[1]) === 0,
        'the subscriber connection to be gone',
      );
      await first.release();
      const next = await waiting;
      expect(next.fence).toBe(first.fence + 1);
      expect(events[1]).toMatchObject({ owner: next.owner, attempts: 2, handoff: true });
      // The holder's release was the only script call since.
      expect(sent()).toBe(before + 3);
      await next.release();
    } finally {
      unsubscribe('lock:acquire', onAcquire);
      await locker.close();
    }
  });

  it('a renewed lock is handed over for the registration lease, then renewed to its ttl at once', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const messages = await listen(server.client(), '{lock:renewed}:released');
    const holder = createLocker({ redis });
    // Registered for the longest backoff plus two command timeouts: 2 s.
    const waiter = createLocker({ redis, retry: { base: 1_000, max: 1_000, jitter: 0 } });
    const first = await holder.acquire('renewed');
    const waiting = waiter.acquire('renewed', { wait: 20_000 });
    await untilQueued(redis, 'renewed', 1);
    await first.release();
    const next = await waiting;
    await until(async () => messages.length === 1, 'the grant message');
    expect(tokenProtocol().grantIn?.(messages[0]!)).toMatchObject({ owner: next.owner, lease: 2_000 });
    await until(async () => (await redis.pttl('{lock:renewed}')) > 29_000, 'the renewal to the 30 s ttl');
    await next.release();
    await Promise.all([holder.close(), waiter.close()]);
  });

  it('a grant the waiter reads after its lease ended is not trusted: it takes the lock by an attempt', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const messages = await listen(server.client(), `${LOCK}:released`);
    // Each refused attempt writes the waiter's registration: the second one is sent once its
    // subscription is active, so after it a release message reaches the waiter.
    await redis.config('SET', 'notify-keyspace-events', 'Kh');
    const registrations = await listen(server.client(), `__keyspace@0__:${LOCK}:waiters`);
    const holder = createLocker({ redis });
    const first = await holder.acquire('handed', { ttl: 30_000 });
    // Renewed locks are handed over for at most their ttl: 300 ms here. It never polls, so
    // once it runs again only the grant message can wake it.
    const waiter = startHolder({ url: server.url, key: 'handed', ttl: 300, wait: 30_000, retry: SLOW_POLL });
    try {
      await waiter.line((line) => line === 'ready');
      await until(async () => registrations.length === 2, 'the waiter subscribed and queued');
      waiter.pause();
      await first.release();
      await until(async () => messages.length === 1, 'the grant message');
      const grant = tokenProtocol().grantIn?.(messages[0]!);
      expect(grant).toMatchObject({ fence: first.fence + 1, lease: 300 });
      // The frozen waiter's grant ends unseen.
      await until(async () => (await redis.exists(LOCK)) === 0, 'the grant expired');
      waiter.resume();
      const taken = JSON.parse(await waiter.line()) as { owner: string; fence: number; handoff: boolean };
      expect(taken.owner).toBe(grant!.owner);
      expect(taken.fence).toBeGreaterThan(grant!.fence);
      // The grant's message preceded the attempt that took the lock.
      expect(taken.handoff).toBe(true);
      expect(await holder.inspect('handed')).toMatchObject({
        held: true,
        owner: taken.owner,
        fence: taken.fence,
      });
      expect(await waiter.finish()).toBe(0);
    } finally {
      await waiter.stop();
      await holder.close();
    }
  });

  it('a waiter killed while queued and handed a renewed lock keeps it no longer than its registration', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const { holder, first, dead, crashed } = await queueCrashedWaiter(redis, server.url, 'crashed');
    try {
      expect((await registrations(redis, 'crashed'))[dead]).toBeGreaterThan(
        Number((await redis.time())[0]) * 1_000,
      );
      await first.release();
      // Its registration is still live, so the release handed it the lock: for the registration's
      // lease (the longest backoff plus two command timeouts, 2 s), not for the 30 s ttl.
      expect(await redis.hget('{lock:crashed}', dead)).toBe('1');
      expect(await redis.pttl('{lock:crashed}')).toBeLessThanOrEqual(2_000);
      const survivor = await holder.acquire('crashed', { ttl: 30_000, wait: 10_000 });
      expect(survivor.fence).toBe(first.fence + 2);
      await survivor.release();
    } finally {
      crashed.child.kill('SIGKILL');
      await holder.close();
    }
  });
});
