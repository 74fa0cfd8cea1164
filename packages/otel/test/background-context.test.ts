import { createLocker, keySlot, type Locker } from '@lock/core';
import { instrumentLocks, type LockInstrumentation } from '@lock/otel';
import { type RedisCluster, type RedisServer, startCluster, startRedis, waitFor } from '@lock/testing';
import { context, trace } from '@opentelemetry/api';
import type { Redis as RedisClient } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Cluster, Redis, tracer } from './support/telemetry.js';

/** A command some client sent, with the trace active when it was sent (what instrumentation-ioredis parents its span on). */
interface Sent {
  readonly client: RedisClient;
  readonly name: string;
  /** The first argument: a subscription's channel. */
  readonly first: string | undefined;
  readonly traceId: string | undefined;
}

/**
 * Every command of every ioredis client (subscriber duplicates and cluster shard subscribers
 * included) as it is sent, recorded from each test's start with lock instrumentation enabled.
 */
function recordCommands(): Sent[] {
  const sent: Sent[] = [];
  const { sendCommand } = Redis.prototype;
  let instrumentation: LockInstrumentation;
  beforeEach(() => {
    sent.length = 0;
    Redis.prototype.sendCommand = function (this: RedisClient, command, stream) {
      sent.push({
        client: this,
        name: command.name,
        first: command.args[0] === undefined ? undefined : String(command.args[0]),
        traceId: trace.getSpanContext(context.active())?.traceId,
      });
      return sendCommand.call(this, command, stream);
    } as typeof sendCommand;
    instrumentation = instrumentLocks();
  });
  afterEach(() => {
    instrumentation.disable();
    Redis.prototype.sendCommand = sendCommand;
  });
  return sent;
}

/** The names of the commands sent in trace `traceId`. */
const namesIn = (commands: Sent[], traceId: string | undefined) =>
  commands.filter((command) => command.traceId === traceId).map((command) => command.name);

/**
 * A locker creates a subscriber connection, a sweeper and a linger timer, and a watchdog timer the
 * first time it needs them, inside whichever request's acquire call that is. What they do later
 * must not be traced in that request, which ended long before.
 */
describe('connections and timers a request made lazily', () => {
  let server: RedisServer;
  let redis: RedisClient;
  let admin: RedisClient;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.redisOptions);
    admin = new Redis(server.redisOptions);
  });
  afterAll(async () => {
    redis.disconnect();
    admin.disconnect();
    await server.stop();
  });

  const sent = recordCommands();
  let lockers: Locker[];
  beforeEach(() => {
    lockers = [];
  });
  afterEach(async () => {
    for (const locker of lockers) await locker.close();
  });

  /** The lock channels subscribed (not the locker's inbox, which it keeps while it lives). */
  const lockChannels = () => admin.pubsub('CHANNELS', '*:released') as Promise<string[]>;
  const isInbox = (command: Sent) => command.first?.includes(':inbox:') ?? false;

  /** Under a request span: waits for a lock another locker holds, so `locker` subscribes. Answers the request's trace. */
  async function waitInRequest(locker: Locker, key: string): Promise<string> {
    const holder = createLocker({ redis });
    lockers.push(holder);
    const held = await holder.acquire(key);
    return tracer.startActiveSpan('request A', async (span) => {
      const waiting = locker.acquire(key, { wait: 10_000 });
      await waitFor('the waiter to subscribe', async () => (await lockChannels()).length > 0);
      await held.release();
      await (await waiting).release();
      span.end();
      return span.spanContext().traceId;
    });
  }

  /** Commands the locker's own connections sent after index `from`, with none of the test's admin commands. */
  const sentSince = (from: number) => sent.slice(from).filter((command) => command.client !== admin);

  it('resubscribes the subscriber connection after a reconnect outside the request that made it', async () => {
    const locker = createLocker({ redis });
    lockers.push(locker);
    const requestTrace = await waitInRequest(locker, 'order:1');
    // The lock channel's subscribe was the waiting call's, so it is in the request's trace; the
    // inbox's serves the locker for as long as it lives, so it is in none.
    const subscribes = sent.filter((command) => command.name === 'subscribe');
    expect(subscribes.find((command) => !isInbox(command))?.traceId).toBe(requestTrace);
    // (ioredis may send a subscription made while it connects twice: once queued, once on ready.)
    expect(new Set(subscribes.filter(isInbox).map((command) => command.traceId))).toEqual(
      new Set([undefined]),
    );
    const from = sent.length;
    // The channel lingers subscribed: the reconnected subscriber subscribes again by itself.
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await waitFor('the subscriber to subscribe again', async () =>
      sentSince(from).some((command) => command.name === 'subscribe'),
    );
    expect(namesIn(sentSince(from), requestTrace)).toEqual([]);
    expect(sentSince(from).find((command) => command.name === 'subscribe')!.traceId).toBeUndefined();
  });

  it('unsubscribes a channel its last waiter left outside that waiter’s request', async () => {
    const locker = createLocker({ redis });
    lockers.push(locker);
    const requestTrace = await waitInRequest(locker, 'order:2');
    const from = sent.length;
    // The sweeper, then the subscription's linger, each end 5 s after the last waiter left.
    await waitFor('the channel to be unsubscribed', async () => (await lockChannels()).length === 0);
    const unsubscribed = sentSince(from).filter((command) => command.name === 'unsubscribe');
    expect(unsubscribed).toHaveLength(1);
    expect(namesIn(sentSince(from), requestTrace)).toEqual([]);
    expect(unsubscribed[0]!.traceId).toBeUndefined();
  }, 30_000);

  it('renews, for a locker made inside a request, outside that request', async () => {
    let locker: Locker | undefined;
    const requestTrace = await tracer.startActiveSpan('request A', async (span) => {
      // A locker made on first use, as a framework integration does in its first request. Its
      // lease is renewed within a second, and long enough that a loaded host's stall before the
      // first renewal does not end it (no renewal is then sent: a 300 ms one could).
      locker = createLocker({ redis, ttl: 3_000 });
      lockers.push(locker);
      await (await locker.acquire('job:1')).release();
      span.end();
      return span.spanContext().traceId;
    });
    const lock = await locker!.acquire('job:2');
    const from = sent.length;
    await waitFor('a renewal', async () => sentSince(from).some((command) => command.name === 'evalsha'));
    const renewals = sentSince(from).filter((command) => command.name === 'evalsha');
    await lock.release();
    expect(namesIn(renewals, requestTrace)).toEqual([]);
    expect(renewals[0]!.traceId).toBeUndefined();
  });
});

describe('shard subscribers a request started on a cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  });
  afterAll(() => cluster.stop());

  const sent = recordCommands();
  const clients: InstanceType<typeof Cluster>[] = [];
  const lockers: Locker[] = [];
  afterEach(async () => {
    for (const locker of lockers.splice(0)) await locker.close();
    for (const client of clients.splice(0)) client.disconnect();
  });

  /** Two keys whose locks (and channels) live on different masters. */
  function keysOnTwoShards(): [string, string] {
    const master = (key: string) => {
      const slot = keySlot(`lock:${key}`);
      return cluster.slotRanges.findIndex((range) => slot >= range.start && slot <= range.end);
    };
    let n = 2;
    while (master(`order:${n}`) === master('order:1')) n++;
    return ['order:1', `order:${n}`];
  }

  it('resubscribes after the shard subscriber’s connection dropped outside the request that started it', async () => {
    const client = (name: string) => {
      const made = new Cluster(
        cluster.startupNodes.map((address) => ({ ...address })),
        {
          redisOptions: { connectionName: name },
        },
      );
      clients.push(made);
      return made;
    };
    const holder = createLocker({ redis: client('holder') });
    const locker = createLocker({ redis: client('waiter') });
    lockers.push(holder, locker);
    const admins = cluster.masters.map((master) => master.client());
    const shardChannels = async () =>
      (
        await Promise.all(admins.map((admin) => admin.call('PUBSUB', 'SHARDCHANNELS') as Promise<string[]>))
      ).flat();
    /** Waits for `key`, held by the holder, until the waiter has subscribed to its channel. */
    async function waitBehindHolder(key: string): Promise<void> {
      const held = await holder.acquire(key);
      const waiting = locker.acquire(key, { wait: 10_000 });
      const before = (await shardChannels()).length;
      await waitFor('the waiter to subscribe', async () => (await shardChannels()).length > before);
      await held.release();
      await (await waiting).release();
    }
    // The subscriber connection is made, and its first shard subscriber started, outside any request.
    const [first, second] = keysOnTwoShards();
    await waitBehindHolder(first);
    // The second key's shard has no subscriber running yet: the request's SSUBSCRIBE starts it.
    const requestTrace = await tracer.startActiveSpan('request A', async (span) => {
      await waitBehindHolder(second);
      span.end();
      return span.spanContext().traceId;
    });
    const from = sent.length;
    // ioredis replaces a shard subscriber whose connection ended and subscribes its channels again.
    for (const admin of admins) await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await waitFor('the channel to be subscribed again', async () =>
      sent.slice(from).some((command) => command.name === 'ssubscribe'),
    );
    const resubscribed = sent.slice(from).filter((command) => command.name === 'ssubscribe');
    expect(namesIn(sent.slice(from), requestTrace)).toEqual([]);
    expect(resubscribed[0]!.traceId).toBeUndefined();
  });
});
