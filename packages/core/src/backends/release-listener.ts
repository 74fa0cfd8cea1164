import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { detached } from '../engine/detached.js';
import { checkMs } from '../engine/options.js';
import { pause } from '../engine/pause.js';
import type { RedisClient } from '../protocol.js';
import { type PubSubMode, pubSubMode } from '../pub-sub-mode.js';
import { isCluster } from '../topology.js';
import { perClient } from './per-client.js';

/** How long a channel stays subscribed after its last listener left, so contention does not churn subscriptions. */
const LINGER_MS = 5_000;
/**
 * How long a listen waits for the inbox's first SUBSCRIBE: a connection that never answers (half
 * open, refused by `maxclients`) must not hold every wait's subscription, and its end, with it.
 */
const INBOX_WAIT_MS = 1_000;
/**
 * How long after ioredis gave up on a subscriber connection it is made again while the caller's
 * client is ready (no `ready` of it to wait for): a server that keeps refusing the connection
 * (`maxclients`) is asked this often at most.
 */
const REVIVE_MS = 1_000;

/** Called with each message published on a channel. */
export type MessageListener = (message: string) => void;

interface Channel {
  readonly listeners: Set<MessageListener>;
  subscribed: Promise<void>;
  /** `subscribed` rejected: the next listen subscribes the channel anew. */
  failed: boolean;
  linger: NodeJS.Timeout | undefined;
}

/** A channel only this listener subscribes to, on which releases tell one of its waiters (see `openInbox`). */
interface Inbox {
  /** Whose it is (see `listen`'s `inboxKey`). */
  readonly key: object;
  readonly name: string;
  /** Subscribed: a registration may name it from now on. Off from a disconnection to the next SUBSCRIBE's answer. */
  active: boolean;
  /** The SUBSCRIBE out, if one is. */
  subscribing: Promise<void> | undefined;
  /** The ACL refused it (NOPERM): not asked again, each refusal being an ACL LOG entry. */
  refused: boolean;
}

/**
 * One subscriber connection (made lazily, a duplicate of the caller's client) that delivers
 * messages to listeners per channel: SSUBSCRIBE on a cluster with sharded pub/sub, SUBSCRIBE
 * otherwise (see `pubSubMode`: releases publish the same way). Backends on
 * the same client share one (see `sharedListener`, or `singleBackend`'s `subscriber` option), so
 * several lockers and lock formats cost one connection.
 *
 * Off a cluster it also has inboxes (for formats with `LockProtocol.inbox`): channels of its
 * own, one per `inboxKey` its users listen with (a backend's namespace: its inbox is named under
 * the keys of the first resource it waited for, which that namespace's ACL covers), all on one
 * subscriber connection of their own, each subscribed from the first listen that names it for
 * as long as its user lives. A release publishes there what it has for one waiter of this
 * listener, framed with the lock's channel, and the message goes to that channel's listeners as if
 * it had come on it. A cluster has none: with sharded pub/sub a channel belongs to one slot, and
 * with plain pub/sub every PUBLISH reaches every node's subscribers anyway.
 */
export class ReleaseListener {
  private connection: Redis | Cluster | undefined;
  /** Whether the connection subscribes sharded: decided when it is made. */
  private sharded = false;
  private readonly channels = new Map<string, Channel>();
  /** The inboxes' connection: their refusal or loss never touches the lock channels'. */
  private inboxConnection: Redis | undefined;
  private readonly inboxes = new Map<object, Inbox>();
  /** The inboxes' names, for each message on their connection. */
  private readonly inboxNames = new Set<string>();
  /** Users whose inbox was dropped (their backend closed): a late listen of theirs makes none. */
  private readonly dropped = new WeakSet<object>();
  /** Waiting for the caller's client to be ready again, to make again the connections ioredis gave up on. */
  private reviving = false;
  /** Set instead when the caller's client was ready as ioredis gave up (see `reviveWithClient`). */
  private reviveTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly linger: number;

  /** `linger`: how long a channel stays subscribed after its last listener left, in ms. Default: 5 s. */
  constructor(
    private readonly redis: RedisClient,
    linger: number = LINGER_MS,
  ) {
    this.linger = checkMs(linger, 'linger');
  }

  /**
   * Calls `onRelease` with each message on `channelName` (and each the inbox gets for it), once
   * the subscription is active. `inboxName`: given by a format whose releases publish to inboxes,
   * it names the inbox of `inboxKey` from a random id, which this call starts subscribing unless
   * it already is. `inboxKey`: whose inbox, one per namespace an ACL may grant alone (see
   * `sharedListener`); default: the listener's own.
   */
  async listen(
    channelName: string,
    onRelease: MessageListener,
    inboxName?: (id: string) => string,
    inboxKey: object = this,
  ): Promise<() => void> {
    if (this.closed) throw new Error('release listener is closed');
    // On a connection of its own: awaited with the channel, so that this call's next attempt,
    // once subscribed, already names it; for a while at most (an inbox is only a saving).
    const inboxing = inboxName && this.openInbox(inboxKey, inboxName);
    let channel = this.channels.get(channelName);
    if (!channel) {
      channel = { listeners: new Set(), subscribed: Promise.resolve(), failed: false, linger: undefined };
      this.channels.set(channelName, channel);
      this.track(channel, this.subscribe(channelName));
    } else if (channel.failed) {
      this.track(channel, this.subscribe(channelName));
    }
    clearTimeout(channel.linger);
    channel.linger = undefined;
    channel.listeners.add(onRelease);
    const current = channel;
    try {
      await current.subscribed;
      if (inboxing) {
        // `inboxing` never rejects.
        await pause(INBOX_WAIT_MS, undefined, (wake) => {
          inboxing.then(wake);
          return () => {};
        });
      }
    } catch (error) {
      current.listeners.delete(onRelease);
      // Listeners already there keep it, and so the inbox still reaches them.
      if (current.listeners.size === 0 && this.channels.get(channelName) === current) {
        this.channels.delete(channelName);
      }
      throw error;
    }
    return () => this.unlisten(channelName, current, onRelease);
  }

  /**
   * The inbox of `inboxKey` (see `listen`) a waiter listening on `channelName` may register, so
   * that a release publishes what it has for that waiter there: only once subscribed, and only
   * while `channelName` is listened to (a waiter of the key is queued here, or was lately).
   * Otherwise undefined: the lock's channel.
   */
  inboxFor(channelName: string, inboxKey: object = this): string | undefined {
    const inbox = this.inboxes.get(inboxKey);
    return inbox?.active && this.channels.has(channelName) ? inbox.name : undefined;
  }

  /** Unsubscribes the inbox of `inboxKey`, whose user is gone for good: a later listen with that key makes none. */
  dropInbox(inboxKey: object): void {
    this.dropped.add(inboxKey);
    const inbox = this.inboxes.get(inboxKey);
    if (!inbox) return;
    this.inboxes.delete(inboxKey);
    this.inboxNames.delete(inbox.name);
    const connection = this.inboxConnection;
    if (!this.wantsInbox()) {
      // The last not refused: its connection goes with it, made again by the next inbox.
      this.inboxConnection = undefined;
      connection?.disconnect();
    } else if (inbox.active) {
      // One still subscribing is unsubscribed once it is (see `subscribeInbox`).
      connection?.unsubscribe(inbox.name).catch(() => {});
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.redis.off('ready', this.revive);
    clearTimeout(this.reviveTimer);
    this.inboxConnection?.disconnect();
    this.inboxConnection = undefined;
    this.inboxes.clear();
    this.inboxNames.clear();
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
    await this.send(this.connect(mode), name);
  }

  /** Makes `subscribing` the channel's subscription, marking the channel failed if it rejects while it still is. */
  private track(channel: Channel, subscribing: Promise<void>): void {
    channel.subscribed = subscribing;
    channel.failed = false;
    subscribing.catch(() => {
      if (channel.subscribed === subscribing) channel.failed = true;
    });
  }

  /** (S)SUBSCRIBEs `name` on `connection`. */
  private async send(connection: Redis | Cluster, name: string): Promise<void> {
    if (!isCluster(this.redis)) {
      await afterHandshake(connection as Redis);
      await connection.subscribe(name);
      return;
    }
    // A cluster's subscribers connect on their first (S)SUBSCRIBE (a shard's, on the first of its
    // slot), so that call makes a connection (and its reconnects and resubscriptions) that
    // outlives this one.
    await detached(() => (this.sharded ? connection.ssubscribe(name) : connection.subscribe(name)));
  }

  /**
   * Subscribes every channel listened to (or lingering) again on `connection`, one command each:
   * ioredis's own resubscription sends one for all, which the ACL refuses whole for one channel it
   * no longer allows (and leaves that rejection unhandled). A channel refused keeps its listeners
   * (the inbox still reaches them), and the next listen of it subscribes it anew.
   */
  private resubscribe(connection: Redis | Cluster): void {
    for (const [name, channel] of this.channels) this.track(channel, this.send(connection, name));
  }

  /**
   * Once ioredis gave up on a subscriber connection (status `end`, its `retryStrategy` said so),
   * it is made again by the next subscription that needs it, or once the caller's client is ready
   * again (its own `connect()`), whichever comes first: the waiters queued meanwhile may ask for
   * nothing before their next poll. A client still ready (only the subscribers were lost) has no
   * `ready` to come: they are made again a while on.
   */
  private reviveWithClient(): void {
    if (this.closed || this.reviving) return;
    this.reviving = true;
    if (this.redis.status === 'ready') {
      this.reviveTimer = setTimeout(this.revive, REVIVE_MS);
      this.reviveTimer.unref();
    } else {
      this.redis.once('ready', this.revive);
    }
  }

  private readonly revive = (): void => {
    this.reviving = false;
    this.reviveTimer = undefined;
    if (this.closed) return;
    if (this.connection?.status === 'end' && this.channels.size > 0) {
      this.connect(this.sharded ? 'sharded' : 'plain');
    }
    if (this.inboxConnection?.status === 'end' && this.wantsInbox()) this.connectInbox();
  };

  /**
   * Makes the inbox of `key` (off a cluster, unless refused) and subscribes it unless it is:
   * answers once that SUBSCRIBE is answered, never rejecting (a listener without the inbox is
   * still one).
   */
  private openInbox(key: object, inboxName: (id: string) => string): Promise<void> | undefined {
    if (this.closed || isCluster(this.redis)) return undefined;
    // A listen that outlived its backend's close (the engine's drain has a deadline) makes none.
    if (this.dropped.has(key)) return undefined;
    let inbox = this.inboxes.get(key);
    if (inbox?.refused) return undefined;
    // Made again after ioredis gave up on it: the inboxes keep their names, registrations may hold them.
    this.connectInbox();
    if (!inbox) {
      const name = inboxName(randomBytes(12).toString('base64url'));
      inbox = { key, name, active: false, subscribing: undefined, refused: false };
      this.inboxes.set(key, inbox);
      this.inboxNames.add(name);
    }
    return this.subscribeInbox(inbox);
  }

  /** Whether an inbox not refused is kept: its connection is then made again once lost. */
  private wantsInbox(): boolean {
    for (const inbox of this.inboxes.values()) if (!inbox.refused) return true;
    return false;
  }

  /**
   * ioredis does not resubscribe the inboxes (`autoResubscribe: false`): its one SUBSCRIBE of
   * every channel would be refused whole for one. This listener does, each on its own, on each
   * reconnection, and with each listen after a failure other than a refusal (same name:
   * registrations may hold it). A refusal gives up that inbox alone.
   */
  private subscribeInbox(inbox: Inbox): Promise<void> | undefined {
    const connection = this.inboxConnection;
    if (!connection || this.inboxes.get(inbox.key) !== inbox || inbox.active || inbox.refused) {
      return undefined;
    }
    // The subscription outlives the call that first listened: kept out of its async context.
    inbox.subscribing ??= detached(() =>
      afterHandshake(connection).then(() => connection.subscribe(inbox.name)),
    ).then(
      () => {
        inbox.subscribing = undefined;
        // Dropped meanwhile (see `dropInbox`).
        if (this.inboxes.get(inbox.key) !== inbox) connection.unsubscribe(inbox.name).catch(() => {});
        else inbox.active = connection.status === 'ready';
      },
      (error: unknown) => {
        inbox.subscribing = undefined;
        if (!(error instanceof Error && error.message.startsWith('NOPERM'))) return;
        inbox.refused = true;
        // Kept by the inboxes still asked for; otherwise an idle connection.
        if (this.wantsInbox() || this.inboxConnection !== connection) return;
        this.inboxConnection = undefined;
        connection.disconnect();
      },
    );
    return inbox.subscribing;
  }

  /** The inboxes' connection: made with the first inbox, and again once ioredis gave up on it. */
  private connectInbox(): Redis {
    const previous = this.inboxConnection;
    if (previous && previous.status !== 'end') return previous;
    const redis = this.redis as Redis;
    // As for the lock channels' connection (see `connect`), plus no resubscription of its own.
    const connection = detached(() =>
      redis.duplicate({ enableOfflineQueue: true, lazyConnect: false, autoResubscribe: false }),
    );
    connection.on('error', () => {});
    connection.on('message', (channel: string, message: string) => {
      const framed = this.inboxNames.has(channel) ? unframe(message) : undefined;
      if (framed) this.deliver(framed.channel, framed.message);
    });
    // A connection replaced (the last inbox dropped, a new one made) must not touch the new one's inboxes.
    connection.on('close', () => {
      if (this.inboxConnection !== connection) return;
      for (const inbox of this.inboxes.values()) inbox.active = false;
    });
    connection.on('ready', () => {
      if (this.inboxConnection !== connection) return;
      for (const inbox of this.inboxes.values()) this.subscribeInbox(inbox);
    });
    connection.on('end', () => {
      if (this.inboxConnection === connection) this.reviveWithClient();
    });
    this.inboxConnection = connection;
    return connection;
  }

  /**
   * Calls each listener of `channel`, whichever lockers they belong to: one that throws (a
   * format's message parsing) is rethrown on the next tick, as `node:diagnostics_channel` does
   * with its subscribers' (see `engine/events.ts`), and the others are still called.
   */
  private deliver(channel: string, message: string): void {
    for (const listener of this.channels.get(channel)?.listeners ?? []) {
      try {
        listener(message);
      } catch (error) {
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }

  /** The lock channels' connection: made at the first subscription, and again once ioredis gave up on it. */
  private connect(mode: PubSubMode): Redis | Cluster {
    const previous = this.connection;
    if (previous && previous.status !== 'end') return previous;
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
        : // Resubscribed by this listener, as the inbox is (see `resubscribe`), whatever the
          // caller's `autoResubscribe` says. A cluster's subscribers are new connections that
          // ioredis subscribes itself, whatever that option says.
          this.redis.duplicate({ enableOfflineQueue: true, lazyConnect: false, autoResubscribe: false }),
    );
    connection.on('error', () => {});
    connection.on(this.sharded ? 'smessage' : 'message', (channel: string, message: string) =>
      this.deliver(channel, message),
    );
    connection.on('end', () => {
      if (this.connection === connection) this.reviveWithClient();
    });
    if (!isCluster(this.redis)) {
      // Its first `ready` sends the subscriptions queued while it connected.
      let connected = false;
      connection.on('ready', () => {
        if (connected) this.resubscribe(connection);
        connected = true;
      });
    }
    this.connection = connection;
    // The channels of the connection given up on.
    if (previous) this.resubscribe(connection);
    return connection;
  }
}

/**
 * A use of the listener shared on a client (see `sharedListener`). The lease is also the
 * `inboxKey` its user listens with: each use has an inbox of its own, named under its own keys.
 */
export interface ListenerLease {
  readonly listener: ReleaseListener;
  /**
   * Gives this use up, and its inbox; the last one given up closes the listener. Once per lease:
   * again, it does nothing.
   */
  release(): Promise<void>;
}

/** Per client, the listener its backends share. */
const listenerOn = perClient((redis) => new ReleaseListener(redis));

/**
 * The release listener of `redis` that every backend on it given no `subscriber` of its own
 * shares (lockers of other namespaces or formats, a Redisson client's lock kinds): one subscriber
 * connection per client for the lock channels, however many lockers, and one for the inboxes.
 * Each use listens with an inbox of its own (see `ListenerLease`): an ACL written per namespace
 * lets each releaser publish to the inboxes of its namespace only, and refuses one locker's
 * inbox without the others'. Made by the first use, closed by the last; made anew by a use after
 * that. Shared by client alone, whatever each locker's `pubSub`:
 * a client has one mode, which every subscription on it reads when made (`pubSubMode`), and a
 * locker forcing another one is refused (`checkPubSub`); `'poll'` lockers take no listener.
 */
export function sharedListener(redis: RedisClient): ListenerLease {
  const use = listenerOn(redis);
  const lease: ListenerLease = {
    listener: use.value,
    release: async () => {
      const left = use.release();
      if (left === 'kept') return use.value.dropInbox(lease);
      if (left === 'last') await use.value.close();
    },
  };
  return lease;
}

/**
 * Resolves once `connection` is past its handshake (status `connect`: connected, its AUTH, CLIENT
 * and ready check out), at once when it is in none. ioredis 5 (from 5.8.2, redis/ioredis#2037)
 * writes a SUBSCRIBE sent meanwhile at once: its ready check's INFO is then refused in subscriber
 * mode, and it drops the connection, subscriptions and all, having answered that SUBSCRIBE.
 * ioredis 6 holds the SUBSCRIBE back itself. Once closed instead, the SUBSCRIBE waits in the
 * offline queue (or fails on a connection given up on), as any other.
 */
function afterHandshake(connection: Redis): Promise<void> {
  if (connection.status !== 'connect') return Promise.resolve();
  // One wait per handshake, however many subscriptions a burst of waiters sends meanwhile.
  let waiting = handshakes.get(connection);
  if (!waiting) {
    waiting = new Promise((resolve) => {
      const done = () => {
        connection.off('ready', done);
        connection.off('close', done);
        handshakes.delete(connection);
        resolve();
      };
      connection.on('ready', done);
      connection.on('close', done);
    });
    handshakes.set(connection, waiting);
  }
  return waiting;
}

/** The handshake a subscriber connection is in, waited for by every subscription sent meanwhile. */
const handshakes = new WeakMap<Redis, Promise<void>>();

/** An inbox message's head: the byte length of the lock's channel that follows it. */
const FRAME = /^(\d{1,9}):/;

/**
 * Splits an inbox message, `<UTF-8 bytes of channel>:<channel><message>` (a script counts bytes,
 * and channels and messages may hold any character); undefined when it is not one.
 */
function unframe(framed: string): { channel: string; message: string } | undefined {
  const head = FRAME.exec(framed);
  if (!head) return undefined;
  const bytes = Number(head[1]);
  const rest = framed.slice(head[0].length);
  let channel = rest.slice(0, bytes);
  // At least as many bytes as characters: as many only when all are ASCII, as channels mostly are.
  if (Buffer.byteLength(channel) !== bytes) {
    channel = Buffer.from(rest).subarray(0, bytes).toString();
    // Too short, or cut inside a character.
    if (Buffer.byteLength(channel) !== bytes) return undefined;
  }
  return { channel, message: rest.slice(channel.length) };
}
