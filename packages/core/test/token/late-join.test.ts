import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import {
  createEngine,
  createLocker,
  type Lock,
  type Locker,
  ReleaseListener,
  singleBackend,
  tokenProtocol,
} from '@lock/core';
import { type RedisServer, startProxy, startRedis, type TcpProxy } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  countScripts,
  registrations,
  SLOW_POLL,
  until,
  untilQueued,
  untilSubscribed,
} from '../support/waiter-queue.js';

const CHANNEL = '{lock:late}:released';

/**
 * A waiter's refusal is answered only after a release notice reached its process: its locker's
 * commands go through a proxy that can hold the replies, while its subscriber connects directly.
 */
describe('a waiter whose refusal is answered after a release notice came', () => {
  let server: RedisServer;
  let proxy: TcpProxy;
  let direct: Redis;
  let viaProxy: Redis;
  let listener: ReleaseListener;
  let holder: Locker;
  let waiters: Locker;
  const attempts = new Map<string, number>();
  const onAcquire = (message: unknown) => {
    const event = message as { owner: string; attempts: number };
    attempts.set(event.owner, event.attempts);
  };

  beforeEach(async () => {
    server = await startRedis();
    proxy = await startProxy({ target: server });
    direct = server.client();
    viaProxy = new Redis(proxy.redisOptions);
    listener = new ReleaseListener(direct);
    holder = createLocker({ redis: direct });
    // Replies held by the proxy must not time out: only their order is under test.
    waiters = createEngine(
      singleBackend(viaProxy, tokenProtocol(), {
        subscriber: listener,
        // Nothing but the lock scripts on the proxied connection once replies are held.
        replication: false,
        eviction: 'ignore',
      }),
      {
        retry: SLOW_POLL,
        commandTimeout: 30_000,
      },
    );
    subscribe('lock:acquire', onAcquire);
  });

  afterEach(async () => {
    unsubscribe('lock:acquire', onAcquire);
    proxy.pass();
    await Promise.all([holder.close(), waiters.close()]);
    await listener.close();
    viaProxy.disconnect();
    await proxy.stop();
    await server.stop();
  });

  /**
   * A waiter that gives up leaves the key's queue subscribed for a while, so the next waiter
   * joins a live subscription with nothing missed and sends one attempt only.
   */
  async function leaveSubscribed(): Promise<void> {
    const controller = new AbortController();
    const gaveUp = waiters
      .acquire('late', { wait: 20_000, signal: controller.signal })
      .catch((e: unknown) => e);
    await untilQueued(direct, 'late', 1);
    await untilSubscribed(direct, CHANNEL, 1);
    controller.abort();
    expect(await gaveUp).toHaveProperty('name', 'AbortError');
    // The abort does not wait for its cleanup; polling once a minute, it would stay registered that long.
    await until(
      async () => Object.keys(await registrations(direct, 'late')).length === 0,
      'the aborted waiter to leave the queue',
    );
  }

  /** Counts the notices `listener` delivers on the lock's channel (after the waiters' queue had each). */
  async function noticeSeen(): Promise<() => number> {
    let seen = 0;
    await listener.listen(CHANNEL, () => {
      seen += 1;
    });
    return () => seen;
  }

  it('does not try again when the notice named another waiter', async () => {
    const first = await holder.acquire('late', { ttl: 30_000 });
    await leaveSubscribed();
    const earlier = waiters.acquire('late', { ttl: 30_000, wait: 20_000 });
    await untilQueued(direct, 'late', 1);
    // Replies come in order: once this one is in, so is the earlier waiter's refusal.
    await viaProxy.ping();
    const seen = await noticeSeen();
    proxy.delay({ downstream: 60_000 });
    const later = waiters.acquire('late', { ttl: 30_000, wait: 20_000 });
    await untilQueued(direct, 'late', 2);
    // The grant goes to the earlier waiter, which takes it from the notice alone.
    await first.release();
    await until(async () => seen() === 1, 'the grant notice');
    const second: Lock = await earlier;
    expect(attempts.get(second.owner)).toBe(1);
    proxy.pass();
    await second.release();
    const third = await later;
    // Refused once, then handed the lock by the release: the notice for the other waiter cost no attempt.
    expect(attempts.get(third.owner)).toBe(1);
    expect(third.fence).toBe(second.fence + 1);
    await third.release();
  });

  it('takes a grant the notice carried for it, without another round trip', async () => {
    const first = await holder.acquire('late', { ttl: 30_000 });
    await leaveSubscribed();
    const seen = await noticeSeen();
    proxy.delay({ downstream: 60_000 });
    const scripts = countScripts(viaProxy);
    const waiting = waiters.acquire('late', { ttl: 30_000, wait: 20_000 });
    await untilQueued(direct, 'late', 1);
    await first.release();
    await until(async () => seen() === 1, 'the grant notice');
    proxy.pass();
    const lock = await waiting;
    expect(attempts.get(lock.owner)).toBe(1);
    expect(scripts()).toBe(1);
    expect(lock.fence).toBe(first.fence + 1);
    expect(await holder.inspect('late')).toMatchObject({ held: true, owner: lock.owner, fence: lock.fence });
    await lock.release();
  });
});
