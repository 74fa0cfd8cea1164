import {
  checkPubSub,
  createLocker,
  InvalidOptionError,
  type Lock,
  type Locker,
  LockerClosedError,
  type LockerOptions,
  type LockProtocol,
  legacyProtocol,
  type PubSubMode,
  ReleaseListener,
  singleBackend,
  tokenProtocol,
} from '@lock/core';
import { type RedisServer, startCluster, startRedis, waitFor } from '@lock/testing';
import { Redis as IORedis, type Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { subscribedChannels } from '../contract/keys.js';
import { SLOW_POLL } from '../support/waiter-queue.js';

/** Connections of the server in pub/sub state (plain or sharded): release subscribers and inboxes. */
async function subscribers(admin: Redis): Promise<number> {
  const list = (await admin.call('CLIENT', 'LIST')) as string;
  return list.split('\n').filter((line) => /\b(sub|ssub|psub)=[1-9]/.test(line)).length;
}

/** `subscribers` summed over servers. */
async function subscribersOn(servers: readonly RedisServer[]): Promise<number> {
  let count = 0;
  for (const server of servers) {
    const admin = server.client();
    count += await subscribers(admin);
    admin.disconnect();
  }
  return count;
}

/**
 * `protocol` counting its answered attempts. A waiter tries again once subscribed (and its inbox
 * with it): once each of `n` waiters has been answered twice, every locker's subscriptions are
 * made, whether the lockers share a connection or not.
 */
function counted(protocol: LockProtocol): {
  protocol: LockProtocol;
  everyWaiterTriedAgain(n: number): Promise<void>;
} {
  const acquire = protocol.acquire.bind(protocol);
  let answered = 0;
  protocol.acquire = (...args) =>
    acquire(...args).finally(() => {
      answered += 1;
    });
  return {
    protocol,
    everyWaiterTriedAgain: (n) =>
      waitFor('every waiter subscribed and tried again', async () => answered >= 2 * n, { interval: 5 }),
  };
}

/** Resolves once some connection subscribes to the lock channel of `resource` (inboxes left out). */
function channelSubscribed(admin: Redis, resource: string): Promise<void> {
  return waitFor(
    `a subscription to the channel of ${resource}`,
    async () =>
      (await subscribedChannels(admin)).some(
        (channel) => channel.includes(resource) && !channel.includes(':inbox:'),
      ),
    { interval: 5 },
  );
}

/** Resolves once some connection subscribes to an inbox. */
function inboxSubscribed(admin: Redis): Promise<void> {
  return waitFor(
    'an inbox subscription',
    async () => (await subscribedChannels(admin)).some((channel) => channel.includes(':inbox:')),
    { interval: 5 },
  );
}

describe.each([
  // A legacy locker has no inbox: its waiting is one connection.
  ['legacy', 'legacy', 'legacy', 1, 1],
  // Two namespaces of token locks, and one connection for their inboxes (one each).
  ['token', 'token', 'token', 2, 2],
  // Token and legacy on one client: one subscriber, and the token locker's inbox, given up with it.
  ['token and legacy', 'token', 'legacy', 2, 1],
] as const)('%s lockers on one client', (_, protocolA, protocolB, connections, afterFirst) => {
  it(`share one subscriber (${connections} pub/sub connection(s) in all), which wakes both, outlives the first to close and closes with the last`, async () => {
    await using server = await startRedis();
    const admin = server.client();
    const first: Omit<LockerOptions, 'redis'> = { protocol: protocolA, prefix: 'a:' };
    const other: Omit<LockerOptions, 'redis'> = { protocol: protocolB, prefix: 'b:' };
    // The holders are lockers of their own clients: only the two waiting lockers share one.
    const holderA = createLocker({ redis: server.client(), ...first });
    const holderB = createLocker({ redis: server.client(), ...other });
    const redis = server.client();
    // Poll once a minute: only a release message reaches a waiter within the test.
    const a = createLocker({ redis, ...first, retry: SLOW_POLL });
    const b = createLocker({ redis, ...other, retry: SLOW_POLL });

    const heldA = await holderA.acquire('k', { ttl: 30_000 });
    const heldB = await holderB.acquire('k', { ttl: 30_000 });
    const waitingA = a.acquire('k', { wait: 20_000 });
    const waitingB = b.acquire('k', { wait: 20_000 });
    await channelSubscribed(admin, 'a:k');
    await channelSubscribed(admin, 'b:k');
    // The inbox, if any, is subscribed before the waiter's attempt is sent again: then counted.
    await (connections === 2 ? inboxSubscribed(admin) : Promise.resolve());
    expect(await subscribers(admin)).toBe(connections);

    // Both lockers are woken on the one connection.
    await heldA.release();
    const gotA: Lock = await waitingA;
    expect(gotA.fence).toBeGreaterThan(heldA.fence);
    await gotA.release();

    // The first locker to close leaves the connection, and the channels, to the other's waiter.
    await a.close();
    await waitFor('the first locker’s inbox given up', async () => (await subscribers(admin)) === afterFirst);
    await heldB.release();
    const gotB = await waitingB;
    expect(gotB.fence).toBeGreaterThan(heldB.fence);
    await gotB.release();
    expect(await subscribers(admin)).toBe(afterFirst);

    // The last to close closes them.
    await b.close();
    await waitFor('the shared connections to close', async () => (await subscribers(admin)) === 0);
    await closeAll([holderA, holderB]);
  });
});

it('a locker closed while its waiter waits leaves the channel to another locker’s waiter of the same key', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const holder = createLocker({ redis: server.client() });
  const redis = server.client();
  const { protocol, everyWaiterTriedAgain } = counted(tokenProtocol());
  const closing = createLocker({ redis, protocol, retry: SLOW_POLL });
  const staying = createLocker({ redis, protocol, retry: SLOW_POLL });
  const held = await holder.acquire('same', { ttl: 30_000 });
  const closed = closing.acquire('same', { wait: 20_000 });
  const waiting = staying.acquire('same', { wait: 20_000 });
  await everyWaiterTriedAgain(2);
  // One connection for the lock channels and one for both lockers' inboxes.
  expect(await subscribers(admin)).toBe(2);
  const refused = expect(closed).rejects.toBeInstanceOf(LockerClosedError);
  await closing.close();
  await refused;
  expect(await subscribers(admin)).toBe(2);
  const releasedAt = performance.now();
  await held.release();
  const next = await waiting;
  expect(next.fence).toBeGreaterThan(held.fence);
  // Woken by the release, not by the last attempt its polling makes at the end of the wait.
  expect(performance.now() - releasedAt).toBeLessThan(10_000);
  await next.release();
  await staying.close();
  await waitFor('the shared connections to close', async () => (await subscribers(admin)) === 0);
  await holder.close();
});

it('a refused locker leaves no use of the client’s subscriber behind: the last open locker still closes it', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const holder = createLocker({ redis: server.client() });
  const redis = server.client();
  expect(() => createLocker({ redis, ttl: -1 })).toThrow(InvalidOptionError);
  const locker = createLocker({ redis, retry: SLOW_POLL });
  const held = await holder.acquire('refused', { ttl: 30_000 });
  const waiting = locker.acquire('refused', { wait: 20_000 });
  await channelSubscribed(admin, 'lock:refused');
  await held.release();
  await (await waiting).release();
  expect(await subscribers(admin)).toBe(2);
  await locker.close();
  await waitFor('the shared connections to close', async () => (await subscribers(admin)) === 0, {
    timeout: 10_000,
  });
  // A locker made after that makes it anew.
  const again = createLocker({ redis, retry: SLOW_POLL });
  const heldAgain = await holder.acquire('refused', { ttl: 30_000 });
  const waitingAgain = again.acquire('refused', { wait: 20_000 });
  await channelSubscribed(admin, 'lock:refused');
  await heldAgain.release();
  await (await waitingAgain).release();
  await again.close();
  await waitFor('the new connections to close', async () => (await subscribers(admin)) === 0);
  await holder.close();
});

it("off a cluster, lockers given 'sharded', 'plain' and 'auto' share one (plain) subscriber, and a 'poll' locker opens none", async () => {
  await using server = await startRedis();
  const admin = server.client();
  const holder = createLocker({ redis: server.client(), protocol: 'legacy' });
  const redis = server.client();
  const { protocol, everyWaiterTriedAgain } = counted(legacyProtocol());
  const listening = (['sharded', 'plain', 'auto'] as const).map((pubSub) =>
    createLocker({ redis, protocol, pubSub, retry: SLOW_POLL }),
  );
  // Polls every 20 ms, for a key of its own.
  const polling = createLocker({ redis, protocol: 'legacy', pubSub: 'poll', retry: { base: 20, max: 20 } });
  const held = await holder.acquire('modes', { ttl: 30_000 });
  const heldPolled = await holder.acquire('polled', { ttl: 30_000 });
  const pending = new Map(
    listening.map((locker, index) => [
      index,
      locker.acquire('modes', { wait: 20_000 }).then((lock) => ({ index, lock })),
    ]),
  );
  const polled = polling.acquire('polled', { wait: 20_000 });
  await everyWaiterTriedAgain(listening.length);
  expect(await subscribers(admin)).toBe(1);
  // Each listening locker's waiter is woken by a release on the one connection.
  let previous: Lock = held;
  while (pending.size > 0) {
    await previous.release();
    const { index, lock } = await Promise.race(pending.values());
    pending.delete(index);
    previous = lock;
  }
  await previous.release();
  await closeAll(listening);
  await waitFor('the shared connection to close', async () => (await subscribers(admin)) === 0);
  await heldPolled.release();
  await (await polled).release();
  expect(await subscribers(admin)).toBe(0);
  await closeAll([polling, holder]);
});

describe.each(['plain', 'sharded'] as const)('on a cluster forced to %s pub/sub', (mode: PubSubMode) => {
  it('a forcing and an auto locker on one client share its subscriber; a locker forcing the other mode is refused', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    const holder = createLocker({ redis: cluster.client(), pubSub: mode });
    const redis = cluster.client();
    const { protocol, everyWaiterTriedAgain } = counted(tokenProtocol());
    const forcing = createLocker({ redis, protocol, pubSub: mode, retry: SLOW_POLL });
    const following = createLocker({ redis, protocol, retry: SLOW_POLL });
    expect(() => createLocker({ redis, pubSub: mode === 'plain' ? 'sharded' : 'plain' })).toThrow(
      InvalidOptionError,
    );
    const held = await holder.acquire('cluster', { ttl: 30_000 });
    const waitingA = forcing.acquire('cluster', { wait: 20_000 });
    const waitingB = following.acquire('cluster', { wait: 20_000 });
    await everyWaiterTriedAgain(2);
    // One subscriber (of the key's shard, with sharded pub/sub), not one per locker.
    expect(await subscribersOn(cluster.masters)).toBe(1);
    // Each releases once it has the lock: the release of one wakes the other.
    const releasing = (lock: Lock) => lock.release().then(() => lock.fence);
    await held.release();
    const fences = await Promise.all([waitingA.then(releasing), waitingB.then(releasing)]);
    expect(Math.min(...fences)).toBeGreaterThan(held.fence);
    expect(await subscribersOn(cluster.masters)).toBe(1);
    await closeAll([forcing, following]);
    await waitFor('the shared connection to close', async () => (await subscribersOn(cluster.masters)) === 0);
    await holder.close();
  }, 60_000);
});

async function closeAll(lockers: readonly Locker[]): Promise<void> {
  await Promise.all(lockers.map((locker) => locker.close()));
}

describe('inboxes on a shared listener', () => {
  /** The token commands the README lists for an ACL user. */
  const COMMANDS =
    'evalsha eval set incr hset pexpire hexists hget hincrby pttl get del hgetall publish subscribe unsubscribe ping time zadd zrange zrem hdel info';

  /** The inboxes registered for `<prefix><key>`'s waiters (fields STX + owner). */
  async function inboxes(admin: Redis, resource: string): Promise<string[]> {
    const fields = await admin.hgetall(`{${resource}}:waiters`);
    return Object.entries(fields)
      .filter(([field]) => field.startsWith('\u0002'))
      .map(([, inbox]) => inbox);
  }

  it('each locker’s inbox lies under its own namespace, and the ACL refusing one namespace’s inbox leaves the other’s', async () => {
    await using server = await startRedis();
    const admin = server.client();
    // Both namespaces' keys, but only namespace b's inboxes.
    await admin.call(
      'ACL',
      'SETUSER',
      'namespaces',
      'reset',
      'on',
      '>secret',
      '~{a:*',
      '~{b:*',
      '&{a:*}:released',
      '&{b:*',
      ...COMMANDS.split(' ').map((command) => `+${command}`),
    );
    const redis = new IORedis({ ...server.redisOptions, username: 'namespaces', password: 'secret' });
    redis.on('error', () => {});
    const holderA = createLocker({ redis: server.client(), prefix: 'a:' });
    const holderB = createLocker({ redis: server.client(), prefix: 'b:' });
    const a = counted(tokenProtocol());
    const b = counted(tokenProtocol());
    const lockerA = createLocker({ redis, prefix: 'a:', protocol: a.protocol, retry: SLOW_POLL });
    const lockerB = createLocker({ redis, prefix: 'b:', protocol: b.protocol, retry: SLOW_POLL });
    try {
      const heldA = await holderA.acquire('k', { ttl: 30_000 });
      const heldB = await holderB.acquire('k', { ttl: 30_000 });
      // Namespace a waits first: its inbox, refused, is asked for before b's.
      const waitingA = lockerA.acquire('k', { wait: 20_000 });
      await a.everyWaiterTriedAgain(1);
      const waitingB = lockerB.acquire('k', { wait: 20_000 });
      await b.everyWaiterTriedAgain(1);
      expect(await inboxes(admin, 'a:k')).toEqual([]);
      expect(await inboxes(admin, 'b:k')).toEqual([expect.stringMatching(/^\{b:k\}:inbox:/)]);
      await heldB.release();
      await (await waitingB).release();
      await heldA.release();
      await (await waitingA).release();
    } finally {
      await closeAll([lockerA, lockerB, holderA, holderB]);
      redis.disconnect();
    }
  });

  it('a listener that throws leaves the message to the other listeners of the channel, and its error is thrown on its own', async () => {
    await using server = await startRedis();
    const listener = new ReleaseListener(server.client());
    const failure = new Error('a format that cannot read the message');
    const thrown: unknown[] = [];
    // Ahead of the runner's own handlers, which would fail the run with the error this test
    // expects; exclusive, and it leaves them as they are.
    process.setUncaughtExceptionCaptureCallback((error) => thrown.push(error));
    try {
      const told: string[] = [];
      await listener.listen('{lock:thrown}:released', () => {
        throw failure;
      });
      await listener.listen('{lock:thrown}:released', (message) => told.push(message));
      await server.client().publish('{lock:thrown}:released', 'released');
      await waitFor('the other listener told', async () => told.length === 1, { timeout: 5_000 });
      await waitFor('the error thrown', async () => thrown.length === 1, { timeout: 5_000 });
      expect(told).toEqual(['released']);
      expect(thrown).toEqual([failure]);
    } finally {
      process.setUncaughtExceptionCaptureCallback(null);
      await listener.close();
    }
  });
});

it('a subscriber that is not a ReleaseListener, false or left out is refused, before the backend takes anything on the client', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const listening = redis.listenerCount('close');
  for (const subscriber of [null, {}, true, 'shared']) {
    expect(() => singleBackend(redis, tokenProtocol(), { subscriber: subscriber as never })).toThrow(
      new InvalidOptionError(
        'subscriber',
        subscriber,
        'a ReleaseListener, false for none, or left out for the one shared on the client',
      ),
    );
  }
  expect(redis.listenerCount('close')).toBe(listening);
});

it('an option singleBackend does not know is refused by name, with the one it likely stands for, before the backend takes anything on the client', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const listening = redis.listenerCount('close');
  const refusal = (() => {
    try {
      singleBackend(redis, tokenProtocol(), { subscribr: false } as never);
    } catch (error) {
      return error;
    }
  })();
  expect(refusal).toBeInstanceOf(InvalidOptionError);
  expect(refusal).toMatchObject({ option: 'subscribr' });
  expect((refusal as Error).message).toMatch(/the singleBackend options: .*\. Did you mean "subscriber"\?$/);
  expect(redis.listenerCount('close')).toBe(listening);
});

it('checkPubSub names one allowed value alone, refuses an empty list, and notes createLocker’s poll only for the default', async () => {
  await using server = await startRedis();
  const redis = server.client();
  expect(() => checkPubSub('plain', redis, ['poll'])).toThrow(
    `invalid option "pubSub": "plain" (expected 'poll')`,
  );
  expect(() => checkPubSub('poll', redis, ['auto', 'plain'])).toThrow(
    `invalid option "pubSub": "poll" (expected 'auto' or 'plain')`,
  );
  expect(() => checkPubSub('auto', redis, [])).toThrow(InvalidOptionError);
  expect(() => checkPubSub('poll', redis)).toThrow("'poll' is createLocker's");
});
