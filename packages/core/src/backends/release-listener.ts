import type { Cluster, Redis } from 'ioredis';
import { detached } from '../engine/detached.js';
import { checkMs } from '../engine/options.js';
import type { RedisClient } from '../protocol.js';
import { type PubSubMode, pubSubMode } from '../pub-sub-mode.js';
import { isCluster } from '../topology.js';

/** How long a channel stays subscribed after its last listener left, so contention does not churn subscriptions. */
const LINGER_MS = 5_000;

/** Called with each message published on a channel. */
export type MessageListener = (message: string) => void;

interface Channel {
  readonly listeners: Set<MessageListener>;
  subscribed: Promise<void>;
  linger: NodeJS.Timeout | undefined;
}

/**
 * One subscriber connection (made lazily, a duplicate of the caller's client) that delivers
 * messages to listeners per channel: SSUBSCRIBE on a cluster with sharded pub/sub, SUBSCRIBE
 * otherwise (see `pubSubMode`: releases publish the same way). Backends on
 * the same client may share one (`singleBackend`'s `subscriber` option), so several lock
 * formats cost one connection.
 */
export class ReleaseListener {
  private connection: Redis | Cluster | undefined;
  /** Whether the connection subscribes sharded: decided when it is made. */
  private sharded = false;
  private readonly channels = new Map<string, Channel>();
  private closed = false;

  private readonly linger: number;

  /** `linger`: how long a channel stays subscribed after its last listener left, in ms. Default: 5 s. */
  constructor(
    private readonly redis: RedisClient,
    linger: number = LINGER_MS,
  ) {
    this.linger = checkMs(linger, 'linger');
  }

  async listen(channelName: string, onRelease: MessageListener): Promise<() => void> {
    if (this.closed) throw new Error('release listener is closed');
    let channel = this.channels.get(channelName);
    if (!channel) {
      channel = { listeners: new Set(), subscribed: this.subscribe(channelName), linger: undefined };
      this.channels.set(channelName, channel);
    }
    clearTimeout(channel.linger);
    channel.linger = undefined;
    channel.listeners.add(onRelease);
    const current = channel;
    try {
      await current.subscribed;
    } catch (error) {
      current.listeners.delete(onRelease);
      if (this.channels.get(channelName) === current) this.channels.delete(channelName);
      throw error;
    }
    return () => this.unlisten(channelName, current, onRelease);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const channel of this.channels.values()) clearTimeout(channel.linger);
    this.channels.clear();
    this.connection?.disconnect();
    this.connection = undefined;
  }

  private unlisten(name: string, channel: Channel, onRelease: MessageListener): void {
    channel.listeners.delete(onRelease);
    if (channel.listeners.size > 0 || this.channels.get(name) !== channel) return;
    // Its unsubscribe belongs to no call: not to the last listener's, which has ended by then.
    channel.linger = detached(() =>
      setTimeout(() => {
        this.channels.delete(name);
        const connection = this.connection;
        if (!connection) return;
        const done = this.sharded ? connection.sunsubscribe(name) : connection.unsubscribe(name);
        done.catch(() => {});
      }, this.linger),
    );
    channel.linger.unref();
  }

  private async subscribe(name: string): Promise<void> {
    const mode = await pubSubMode(this.redis);
    // Closed while the probe was out: a connection made now would outlive the listener.
    if (this.closed) throw new Error('release listener is closed');
    const connection = this.connect(mode);
    if (!isCluster(this.redis)) {
      await connection.subscribe(name);
      return;
    }
    // A cluster's subscribers connect on their first (S)SUBSCRIBE (a shard's, on the first of its
    // slot), so that call makes a connection (and its reconnects and resubscriptions) that
    // outlives this one.
    await detached(() => (this.sharded ? connection.ssubscribe(name) : connection.subscribe(name)));
  }

  private connect(mode: PubSubMode): Redis | Cluster {
    if (this.connection) return this.connection;
    const deliver = (channel: string, message: string) => {
      for (const listener of this.channels.get(channel)?.listeners ?? []) listener(message);
    };
    // The offline queue is ours even when the caller's client has it off: a subscription sent
    // while the duplicate is still connecting must wait for it, not fail. It connects at once,
    // and detached: its sockets, reconnects and resubscriptions would otherwise keep the async
    // context (the trace) of the call that first waited, for as long as the locker lives.
    this.sharded = mode === 'sharded';
    const connection: Redis | Cluster = detached(() =>
      isCluster(this.redis)
        ? this.redis.duplicate(undefined, {
            shardedSubscribers: this.sharded,
            enableOfflineQueue: true,
            lazyConnect: false,
          })
        : this.redis.duplicate({ enableOfflineQueue: true, lazyConnect: false }),
    );
    connection.on('error', () => {});
    connection.on(this.sharded ? 'smessage' : 'message', deliver);
    this.connection = connection;
    return connection;
  }
}
