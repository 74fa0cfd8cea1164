import type { Cluster, Redis } from 'ioredis';

/** A connection the library runs its scripts on: a standalone or sentinel-backed `Redis`, or a `Cluster`. */
export type RedisClient = Redis | Cluster;

/** What one acquisition attempt on one Redis answered. */
export type AcquireReply =
  | {
      readonly acquired: true;
      /** Fencing token of this acquisition: strictly greater than every earlier one on this key. */
      readonly fence: number;
      /** Hold count after this acquisition: 1 on a first acquire, more on re-entry. */
      readonly holds: number;
      /** What release and extend must present to prove ownership (the owner, or the value written). */
      readonly token: string;
      /**
       * The lock's TTL in ms right after this attempt, when it is not the requested ttl (a
       * re-entry that kept a longer lease, or a format that re-entry shortens). The engine's
       * deadline follows what the server will honour. Default: the requested ttl.
       */
      readonly ttl?: number;
      /**
       * On a re-entry, the value of the fence counter the next first acquisition
       * here would increment: at least every fence written back to this server. RedLock draws
       * a re-entry that no majority re-entered (the hold was lost; this server kept it) above
       * it, as a new hold. Default: unknown (such a re-entry reports the hold's fence).
       */
      readonly counter?: number;
    }
  | {
      readonly acquired: false;
      /** The holder's remaining time to live in ms; -1 when the key has no TTL or it is unknown. */
      readonly remaining: number;
      /**
       * The server's clock in ms when the attempt queued the caller, for formats that hand the
       * lock to a queued waiter (`grantIn`): the grant's time is read against it. Default: none.
       */
      readonly serverTime?: number;
    };

/** A lock that a release wrote for a queued waiter, as its message reports it. */
export interface HandedGrant {
  /** The waiter the lock now belongs to. */
  readonly owner: string;
  readonly fence: number;
  /** What release and extend must present (as `AcquireReply.token`). */
  readonly token: string;
  /** The lease written, in ms. */
  readonly lease: number;
  /** The server's clock in ms when it was written (compare with `serverTime` of a refusal). */
  readonly at: number;
}

/** What the engine tells a protocol about the acquire call an attempt belongs to. */
export interface AttemptContext {
  /** How long the acquire call may wait in all, in ms: 0 for a single try, Infinity when unbounded. */
  readonly wait: number;
  /**
   * The owner was made for this acquire call alone, so a hold of it found in Redis can only be
   * this call's own earlier attempt (its reply was lost, or the client resent it after a
   * reconnect): a protocol answers that hold as it stands instead of counting a re-entry.
   * Default: false.
   */
  readonly fresh?: boolean;
  /**
   * Set when the call may wait: for how long, in ms, a format that queues waiters keeps this
   * caller registered after a refused attempt (each attempt renews it; a waiter that stops
   * renewing, having crashed, is skipped). Default: not queued.
   */
  readonly queueLease?: number;
  /**
   * The lease, in ms, of a lock a release may write for this caller while it is queued (a direct
   * grant, reported by the release message; see `LockProtocol.grantIn`), sparing it a round trip.
   * Used only with `fresh` and `queueLease` (a protocol ignores it otherwise), and only on one
   * master whose grants need no replica confirmation: a backend that confirms grants, or needs a
   * quorum of them, never passes it on. Default: not granted directly (the release names the
   * waiter, which tries again).
   */
  readonly grantLease?: number;
  /**
   * The inbox of the caller's release listener (see `LockProtocol.inbox`): a format that queues
   * this caller registers it, so that a release publishes what it has for this caller there, not
   * on the lock's channel where every process waiting for the lock would wake for it. Set by a
   * backend on plain pub/sub, once the inbox is subscribed. Default: none (the lock's channel).
   */
  readonly inbox?: string;
  /** An earlier attempt of this call was refused, so it may be queued: a grant takes it out. Default: false. */
  readonly queued?: boolean;
  /**
   * An id unique to this attempt (across processes): a format that records it answers a copy of
   * the attempt already applied (the client resent it after a reconnect) as it stands instead of
   * counting a second hold. Default: none (every copy counts).
   */
  readonly attempt?: string;
  /**
   * Set on the context of an undo (`Backend.undo`): the acquire call had already ended (given up,
   * or with the lock from another attempt) when the grant was given back, so no later attempt of
   * it will come for what a format keeps for the caller's next attempt (the Redisson fair lock
   * keeps a waiter's turn). Default: false (the call may still be waiting).
   */
  readonly ended?: boolean;
  /**
   * Given by the engine to a backend over several servers: a grant one server answered only
   * after the attempt was undone (the undo sent there may have been dropped by the client while
   * it resent the attempt) is passed here with how to undo it on that server. The engine undoes
   * it at once for an owner that is not fresh (the undo is that attempt's own), and for a fresh
   * owner only once its call has ended without the lock: until then a later attempt of the call
   * may hold that very key. Default: none (the backend undoes it at once, for owners that are
   * not fresh only).
   */
  readonly lateGrant?: (undo: () => Promise<void>) => void;
  /**
   * Given by the engine to a call that may wait: answers false once the call was given up on and
   * its abandon (`LockProtocol.abandon`) is on its way. An attempt of it not sent yet (a backend
   * still checking the server, a script's resend after NOSCRIPT; see `LuaScript.run`) is then
   * not sent but answered as a refusal: landing after the abandon, it would queue the owner
   * again, to be handed the lock when nobody waits for it. Only that call's attempts: another
   * call of the same owner (explicit, re-entrant) goes on. Default: always sent.
   */
  readonly wanted?: () => boolean;
}

/** What a release answered: freed, still held after a re-entrant release, or not ours. */
export type ReleaseReply = 'released' | 'held' | 'not-owner';

/** A side-effect-free look at one lock. */
export interface Inspection {
  /** Whether anyone holds the lock. */
  readonly held: boolean;
  /** Remaining time to live in ms while held, -1 for a key with no TTL, else null. */
  readonly ttl: number | null;
  /** The holder, when the format records one. */
  readonly owner: string | null;
  /** The last fence handed out on this key, if any. */
  readonly fence: number | null;
  /** The holder's hold count (re-entries), 0 when free. */
  readonly holds: number;
}

/** One lock that the watchdog renews. */
export interface RenewalItem {
  readonly resource: string;
  readonly owner: string;
  readonly token: string;
}

/**
 * A wire format: how a lock is laid out in ONE Redis and the scripts that change it. Protocols
 * know nothing of waiting, renewal, handles or topology beyond "is this a cluster"; the engine
 * owns those once for every protocol. All times are milliseconds.
 */
export interface LockProtocol {
  /** Name reported by `inspect()` and events, e.g. `'token'`. */
  readonly name: string;
  /**
   * Refuses, before anything is written, a resource this protocol cannot lock (throws
   * `InvalidKeyError`); on a cluster every key its scripts touch must share one slot.
   */
  validate(resource: string, cluster: boolean): void;
  /**
   * Refuses, before anything is written, a ttl (ms) this protocol cannot store (throws
   * `InvalidOptionError`), such as one that is not whole seconds for a format in seconds. The
   * engine checks every ttl it is given with it: the locker's, each acquisition's, each extend's.
   * Optional.
   */
  checkTtl?(ttl: number): void;
  /**
   * The key that holds the lock; every other key of the lock shares its cluster slot. Lets a
   * cluster backend batch renewals per slot. Optional: without it renewals are sent one by one.
   */
  lockKey?(resource: string): string;
  /** Channel on which a release of `resource` is published, for `waiter` (fair locks address one waiter). */
  channel(resource: string, waiter: string): string;
  /**
   * The name of a release listener's inbox, a channel only that listener subscribes to, for a
   * format whose release publishes a message meant for one queued waiter to the inbox the waiter
   * registered (`AttemptContext.inbox`), framed as `<UTF-8 bytes of channel>:<channel><message>`
   * with the `channel()` it stands for. `resource` is the first one the backend waited for (each
   * backend has an inbox of its own, even on a listener shared with others) and `id` a random
   * one: a name under the resource's keys lets the ACL channel pattern of the lock keys cover it. Used on plain pub/sub only. Optional: without it every
   * message is published on `channel()`.
   */
  inbox?(resource: string, id: string): string;
  /**
   * One atomic attempt: take the lock (or re-enter it as `owner`) with a `ttl`, else report the
   * holder's remaining ms. The engine always passes `context`; direct callers may omit it.
   */
  acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
    context?: AttemptContext,
  ): Promise<AcquireReply>;
  /**
   * Called once when a waiting acquire ends without the lock (timeout, abort, close) after at
   * least one refusal, so formats that enqueue waiters (fair locks) can take `owner` out. Optional.
   */
  abandon?(redis: RedisClient, resource: string, owner: string, context?: AttemptContext): Promise<void>;
  /**
   * Undo one hold by `owner`; the last one frees the lock and publishes on its channel. A format
   * whose release may write the lock for a queued waiter (a direct grant, see `grantIn`) calls
   * `handedOn` with it before answering, so a waiter of the same client need not wait for the
   * message. `id` names this release, the same on every retry of it: a format that counts
   * re-entrant holds applies a release of one id once, however often it is sent. `attempt`, when
   * the engine knows it, is the acquire attempt (`AttemptContext.attempt`) that took the hold
   * given back: a format that lists an owner's attempts for `undo` may take it out. Default: none.
   */
  release(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    handedOn?: (grant: HandedGrant) => void,
    id?: string,
    attempt?: string,
  ): Promise<ReleaseReply>;
  /**
   * Undo of acquire attempt `attempt` (`AttemptContext.attempt`) of an owner that is not fresh:
   * takes off the hold it added, as `release` does, only if this server applied that attempt,
   * and once however often it is sent; answers as `release` (`'held'`, unchanged, where the
   * attempt was not applied). RedLock sends it to the masters that did not grant an attempt it
   * undoes: the attempt may never have run there, and a plain release would take off a hold the
   * owner had before, still in use. Optional: without it those masters are sent nothing, and
   * whatever the attempt added there ends with its ttl. `context`: the attempt's, with `ended`
   * set when its call had ended.
   */
  undo?(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    attempt: string,
    context?: AttemptContext,
  ): Promise<ReleaseReply>;
  /**
   * Reset the TTL if, and only if, `owner` still holds it; never re-creates a missing key.
   * Answers the token to present from now on (formats that store a deadline rewrite it, so
   * their token changes), or null when the lock is no longer ours.
   */
  extend(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    ttl: number,
  ): Promise<string | null>;
  /**
   * Renew many locks in one round trip; one answer per item, in order, as `extend`. On a cluster
   * the backend only passes items whose lock keys share one slot. Optional.
   */
  extendMany?(redis: RedisClient, items: readonly RenewalItem[], ttl: number): Promise<(string | null)[]>;
  /**
   * The fence counter a first acquisition of `resource` increments, so a backend on a replicated
   * deployment can stamp it with its master and raise it after a failover. Optional: a format
   * without a counter of its own (Redisson's) has only its master's run id read, routed by
   * `lockKey` on a cluster (give one when the lock key is not `resource`).
   */
  fenceCounter?(resource: string, cluster: boolean): string;
  /**
   * Raise the key's fence counter to at least `fence` (RedLock's max-register write-back), and
   * the fence stored with `owner`'s hold of the key, if it holds it here, so that a re-entry
   * reports the fence that was published. Optional.
   */
  raiseFence?(redis: RedisClient, resource: string, fence: number, owner?: string): Promise<void>;
  /**
   * Store `fence` as the fence of `owner`'s hold of the key, if it holds it here, lower or not,
   * leaving the counter as it is: RedLock writes a re-entered hold's fence to a master that had
   * lost the key and drew a fence of its own for the re-entry, so that later re-entries report
   * the hold's fence. Optional.
   */
  keepFence?(redis: RedisClient, resource: string, owner: string, fence: number): Promise<void>;
  /** Read the lock without changing it. */
  inspect(redis: RedisClient, resource: string): Promise<Inspection>;
  /** Whether a message on `channel()` means "released" (formats publish other messages too). Default: any message. */
  isReleaseMessage?(message: string): boolean;
  /**
   * Whether a release message frees the lock for every waiter at once (a write unlock letting
   * all readers in), so each waiting call of a process is woken instead of the first. Default: false.
   */
  wakesAll?(message: string): boolean;
  /**
   * The owner a release message names as the next to try (a format that queues waiters), so that
   * only that waiter is woken, in whichever process it waits. Default: none named (the first
   * waiter of each process is woken).
   */
  addressee?(message: string): string | undefined;
  /**
   * The lock a release message reports having written for a queued waiter (registered with
   * `AttemptContext.grantLease`). Default: none (formats that only name the next waiter).
   */
  grantIn?(message: string): HandedGrant | undefined;
}
