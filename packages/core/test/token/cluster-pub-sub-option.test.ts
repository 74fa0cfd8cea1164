import {
  createLocker,
  InvalidOptionError,
  type PubSubMode,
  type PubSubOption,
  pubSubMode,
  type RedisClient,
} from '@lock/core';
import { type RedisCluster, type RedisServer, startCluster, startRedis, waitFor } from '@lock/testing';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SLOW_POLL } from '../support/waiter-queue.js';

/**
 * Gets the messages published for `channel`, heard by a subscriber of the given kind. A plain
 * subscriber never hears `SPUBLISH`, nor a sharded one `PUBLISH`: what it hears says how they were
 * published. With plain pub/sub a release publishes what it has for one waiter to the inbox of
 * the waiter's locker, framed with `channel`: a plain subscriber hears the inboxes too.
 */
async function listen(subscriber: Redis | Cluster, channel: string, mode: PubSubMode): Promise<string[]> {
  const heard: string[] = [];
  subscriber.on(mode === 'sharded' ? 'smessage' : 'message', (from: string, message: string) => {
    if (from === channel) heard.push(message);
  });
  if (mode === 'sharded') {
    await (subscriber as Redis).ssubscribe(channel);
    return heard;
  }
  const frame = `${Buffer.byteLength(channel)}:${channel}`;
  subscriber.on('pmessage', (_pattern: string, _inbox: string, message: string) => {
    if (message.startsWith(frame)) heard.push(message.slice(frame.length));
  });
  await subscriber.subscribe(channel);
  await subscriber.psubscribe('*:inbox:*');
  return heard;
}

/** Subscribers of `channel` of one kind on `servers` (`pubsub` names their PUBSUB command). */
async function subscribers(
  servers: readonly RedisServer[],
  channel: string,
  mode: PubSubMode,
  pubsub = 'PUBSUB',
): Promise<number> {
  let count = 0;
  for (const server of servers) {
    const admin = server.client();
    const [, n] = (await admin.call(pubsub, mode === 'sharded' ? 'SHARDNUMSUB' : 'NUMSUB', channel)) as [
      string,
      number,
    ];
    admin.disconnect();
    count += n;
  }
  return count;
}

interface HandOver {
  readonly holder: RedisClient;
  readonly waiter: RedisClient;
  readonly mode: PubSubMode;
  /** The holder's `pubSub` option. Default: `mode`. */
  readonly given?: PubSubOption;
  /** Where the waiter's subscription shows: every master, or the one server. */
  readonly servers: readonly RedisServer[];
  /** The servers' name for `PUBSUB`. Default: `'PUBSUB'`. */
  readonly pubsub?: string;
  /** A subscriber of the kind `mode` names, for the observer of the release. */
  readonly observer: Redis | Cluster;
}

/**
 * A lock released with a waiter of another client (given `pubSub: mode`) queued: the waiter
 * subscribes the way `mode` says, the holder's release is published that way, and the waiter
 * takes the lock.
 */
async function handOver(key: string, setup: HandOver): Promise<void> {
  const { mode } = setup;
  const holder = createLocker({ redis: setup.holder, pubSub: setup.given ?? mode });
  const waiter = createLocker({ redis: setup.waiter, pubSub: mode, retry: SLOW_POLL });
  const channel = `{lock:${key}}:released`;
  const lock = await holder.acquire(key, { ttl: 60_000 });
  const waiting = waiter.acquire(key, { wait: 20_000 });
  await waitFor(
    `the waiter's ${mode} subscription`,
    async () => (await subscribers(setup.servers, channel, mode, setup.pubsub)) === 1,
    { timeout: 10_000 },
  );
  const heard = await listen(setup.observer, channel, mode);
  await waitFor(
    'the waiter to be queued',
    async () => (await setup.holder.zcard(`{lock:${key}}:queue`)) === 1,
  );
  expect(await lock.release()).toBe('released');
  await waitFor(`the release on the ${mode} channel`, async () => heard.length === 1, { timeout: 10_000 });
  const next = await waiting;
  expect(next.fence).toBeGreaterThan(lock.fence);
  await next.release();
  await Promise.all([holder.close(), waiter.close()]);
}

/** Keys on every master: the refusals below must write none. */
async function keysIn(cluster: RedisCluster): Promise<number> {
  let keys = 0;
  for (const master of cluster.masters) {
    const admin = master.client();
    keys += await admin.dbsize();
    admin.disconnect();
  }
  return keys;
}

describe('pubSub on a Redis 7 cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  }, 60_000);
  afterAll(() => cluster.stop());

  it('refuses a value that is not a mode, naming it, before anything is written or forced', async () => {
    const redis = cluster.client();
    const before = await keysIn(cluster);
    for (const bad of ['on', 'OFF', 'Plain', true, null, 0]) {
      const refusal = (() => {
        try {
          createLocker({ redis, pubSub: bad as never });
          return null;
        } catch (error) {
          return error;
        }
      })();
      expect(refusal, String(bad)).toBeInstanceOf(InvalidOptionError);
      expect((refusal as InvalidOptionError).option).toBe('pubSub');
      expect((refusal as InvalidOptionError).value).toBe(bad);
      expect((refusal as Error).message).toContain("(expected 'auto', 'sharded', 'plain' or 'poll')");
    }
    expect(await keysIn(cluster)).toBe(before);
    // Nothing was forced: the client is still probed.
    expect(await pubSubMode(redis)).toBe('sharded');
  });

  it("'plain' publishes releases with PUBLISH and subscribes waiters with SUBSCRIBE, asking no probe", async () => {
    const holder = cluster.client();
    const waiter = cluster.client();
    await handOver('plain', {
      holder,
      waiter,
      mode: 'plain',
      servers: cluster.masters,
      observer: cluster.client(),
    });
    // A forced mode is known at once: no PUBSUB SHARDNUMSUB was asked.
    expect(pubSubMode(holder)).toBe('plain');
    expect(pubSubMode(waiter)).toBe('plain');
  }, 60_000);

  it('refuses to force a client the other way, and its lockers left to auto follow the forced mode', async () => {
    const redis = cluster.client();
    const forced = createLocker({ redis, pubSub: 'plain' });
    expect(() => createLocker({ redis, pubSub: 'sharded' })).toThrow(
      `invalid option "pubSub": "sharded" (expected 'plain' or 'auto': another locker forced 'plain' on this client`,
    );
    const same = createLocker({ redis, pubSub: 'plain' });
    expect(pubSubMode(redis)).toBe('plain');
    await handOver('follows', {
      holder: redis,
      given: 'auto',
      waiter: cluster.client(),
      mode: 'plain',
      servers: cluster.masters,
      observer: cluster.client(),
    });
    await Promise.all([forced.close(), same.close()]);
  }, 60_000);

  it('refuses to force a client whose mode was probed already', async () => {
    const redis = cluster.client();
    expect(await pubSubMode(redis)).toBe('sharded');
    for (const mode of ['plain', 'sharded'] as const) {
      expect(() => createLocker({ redis, pubSub: mode })).toThrow(
        `invalid option "pubSub": "${mode}" (expected 'auto': this client's mode was probed before`,
      );
    }
    await createLocker({ redis, pubSub: 'auto' }).close();
  });

  it('a locker refused for another option forces nothing on its client', async () => {
    const redis = cluster.client();
    expect(() => createLocker({ redis, pubSub: 'plain', ttl: 0 })).toThrow('invalid option "ttl": 0');
    const sharded = createLocker({ redis, pubSub: 'sharded' });
    expect(pubSubMode(redis)).toBe('sharded');
    await sharded.close();
  });
});

it("'sharded' on a cluster whose probe answers plain (PUBSUB renamed, as managed services do) publishes and subscribes sharded", async () => {
  await using cluster = await startCluster({
    masters: 3,
    replicasPerMaster: 0,
    server: { config: { 'rename-command': 'PUBSUB PUBSUB-ADMIN' } },
  });
  // The probe is misled: the servers have sharded pub/sub, but `PUBSUB` is an unknown command.
  expect(await pubSubMode(cluster.client())).toBe('plain');
  const holder = cluster.client();
  const waiter = cluster.client();
  await handOver('sharded', {
    holder,
    waiter,
    mode: 'sharded',
    servers: cluster.masters,
    pubsub: 'PUBSUB-ADMIN',
    observer: cluster.client({ shardedSubscribers: true }),
  });
  expect(pubSubMode(holder)).toBe('sharded');
}, 60_000);

describe('pubSub off a cluster', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('is checked but ignored: lockers given either mode share a client, and pub/sub stays plain', async () => {
    const redis = server.client();
    expect(() => createLocker({ redis, pubSub: 'on' as never })).toThrow(
      `invalid option "pubSub": "on" (expected 'auto', 'sharded', 'plain' or 'poll')`,
    );
    const plain = createLocker({ redis, pubSub: 'plain' });
    expect(pubSubMode(redis)).toBe('plain');
    await handOver('standalone', {
      holder: redis,
      given: 'sharded',
      waiter: server.client(),
      mode: 'plain',
      servers: [server],
      observer: server.client(),
    });
    await plain.close();
  }, 60_000);
});
