import type {
  AttemptContext,
  HandedGrant,
  Inspection,
  LockProtocol,
  ReleaseReply,
  RenewalItem,
} from './protocol.js';

/** A successful acquisition as the engine sees it, whatever the topology. */
export interface BackendGrant {
  readonly acquired: true;
  readonly fence: number;
  readonly holds: number;
  readonly token: string;
  /**
   * How long the lock is certainly held, in ms counted from the moment the attempt was sent
   * (the ttl on one server; ttl minus clock drift for RedLock). Never ≤ 0: a backend that would
   * answer that releases what it took and reports a refusal instead.
   */
  readonly validity: number;
  /**
   * Whether replicas confirmed the grant (WAIT gating), so a failover to one of them keeps it.
   * Default: false.
   */
  readonly confirmed?: boolean;
  /**
   * Why the grant, made, must not be handed out (on a cluster, one ioredis moved to a master this
   * client had not checked): the engine undoes it and tries again while the wait lasts, as when
   * Redis is unavailable, with this as the `LockUnavailableError`'s cause. Default: none.
   */
  readonly unusable?: Error;
}

/** A successful renewal: the lock is certainly held for `validity` ms from the send time. */
export interface BackendExtension {
  readonly validity: number;
  /** The token to present from now on (unchanged for most formats). */
  readonly token: string;
}

/** Whom a release message wakes. */
export interface ReleaseNotice {
  /** The lock is free for every waiter at once (`LockProtocol.wakesAll`). */
  readonly all: boolean;
  /** The one owner named to try next (`LockProtocol.addressee`), if any. */
  readonly to: string | undefined;
  /** The lock written for `to` by the release (`LockProtocol.grantIn`): it need not try. */
  readonly grant?: HandedGrant;
}

/**
 * What a backend's `release` tells of how its answer came about, for the engine to tell a lock
 * lost under its holder from an answer the release caused itself: a copy of it resent after a
 * reconnect lost the first one's reply finds the key that first copy deleted gone.
 */
export interface ReleaseWitness {
  /**
   * Set by the backend when its `'not-owner'` comes from copies that ran once each: no connection
   * that carried one closed between its send and its answer (see `Connection.closes`), so none
   * was resent. Left false (a backend that cannot tell), a `'not-owner'` proves nothing.
   */
  ranOnce: boolean;
}

/** A refused acquisition: someone else holds it, for about `remaining` ms (-1 when unknown). */
export interface BackendRefusal {
  readonly acquired: false;
  readonly remaining: number;
  /** The server's clock when the caller was queued (`AcquireReply`), when the protocol reports it. */
  readonly serverTime?: number;
}

/**
 * Where locks live: one Redis (standalone, sentinel, cluster) or a quorum of independent
 * masters. A backend runs a protocol's scripts on its topology and delivers release
 * notifications; the engine turns that into handles, waiting, renewal and events.
 */
export interface LockBackend {
  readonly protocol: LockProtocol;
  /** Whether every key of one lock must share a cluster slot. */
  readonly cluster: boolean;
  /**
   * How much longer than one round trip an acquisition attempt may take, in ms: WAIT blocking for
   * replicas. The engine reads it for each attempt and bounds the attempt by its command timeout
   * plus this. Default: 0.
   */
  readonly acquireAllowance?: number;
  /**
   * How many times the one connection that carries its acquisitions has closed (a client that
   * reconnects, resending or dropping the commands it had not had answered): while this has not
   * moved, that connection answers in order. Only a backend on one connection has it (not on a
   * cluster, nor RedLock): the engine then sends no attempt of a call behind one of its own still
   * unanswered on it. Default: none (every attempt is sent).
   */
  readonly connectionCloses?: number;
  /**
   * Whether the client drops the commands a closed connection left unanswered, never settling
   * them (`autoResendUnfulfilledCommands: false`), rather than sending them again: the engine
   * then undoes such an attempt itself, as no late answer will. Default: false.
   */
  readonly dropsUnanswered?: boolean;
  /**
   * Whether a re-entry of a hold always stands for the fence its first acquisition handed out,
   * whatever a server answers: the engine then hands that fence to every re-entry of a hold it
   * keeps. RedLock: a master that granted the hold late drew a fence of its own, which it may
   * report until the hold's reaches it. Default: false, the fence answered (Redisson's fenced
   * lock draws a new one for each re-entry).
   */
  readonly fenceKeptOnReentry?: boolean;
  /**
   * Why the backend's connection is down, while it is: the client's last connection error (a
   * refused connect, an unknown host, a refused login), holding no command or its arguments. The
   * engine reads it when a call got no answer and names it in the `LockUnavailableError`
   * (`connectionError`, and the message). Default: none, failures are reported as they are.
   */
  readonly connectionError?: Error;
  /**
   * How long a lease of `ttl` ms is certainly held, in ms from the send time of the command that
   * set it: the ttl less the backend's allowance for clock drift. The engine uses it where it
   * bounds a hold by a lease no answer reported (an extend that failed but may have landed).
   * Default: `ttl - clockDrift(ttl)`.
   */
  validityOf?(ttl: number): number;
  acquire(
    resource: string,
    owner: string,
    ttl: number,
    context?: AttemptContext,
  ): Promise<BackendGrant | BackendRefusal>;
  /** Passes `LockProtocol.abandon` on (on every node that may have enqueued `owner`). Optional. */
  abandon?(resource: string, owner: string, context?: AttemptContext): Promise<void>;
  /**
   * Passes `LockProtocol.release` on; `handedOn` as there (backends whose grants need more than
   * one server never call it), `id` and `attempt` as there; `witness`, when given, is told whether a
   * `'not-owner'` answer is Redis's word (see `ReleaseWitness`).
   */
  release(
    resource: string,
    owner: string,
    token: string,
    handedOn?: (grant: HandedGrant) => void,
    id?: string,
    witness?: ReleaseWitness,
    attempt?: string,
  ): Promise<ReleaseReply>;
  /**
   * Gives back the grant of the attempt made with `context` that will not be used (it came back
   * too late, or the call ended without it), taking off only the holds that attempt added: a
   * backend whose grants span several servers sends a server that did not grant it
   * `LockProtocol.undo`, not a release. Optional: the engine calls `release` instead.
   */
  undo?(resource: string, owner: string, token: string, context: AttemptContext): Promise<void>;
  /** The new validity (ms from the send time) and token, or null when the lock is no longer ours. */
  extend(resource: string, owner: string, token: string, ttl: number): Promise<BackendExtension | null>;
  /**
   * `extend` for many locks in as few round trips as the topology allows; one answer per item, in
   * order: an `Error` in place of an item whose outcome could not be told (its node unreachable,
   * too few masters answering) while the others' are known.
   */
  extendMany(items: readonly RenewalItem[], ttl: number): Promise<(BackendExtension | null | Error)[]>;
  inspect(resource: string): Promise<Inspection>;
  /**
   * Calls `onRelease` whenever a release message for `resource` arrives for `waiter`. Resolves
   * once the subscription is active, with a function that ends it. Optional: without it the
   * engine's waiters poll with the backoff and are queued nowhere, since a release that handed
   * them the lock or named them could not tell them (`pubSub: 'poll'`).
   */
  listen?(resource: string, waiter: string, onRelease: (notice: ReleaseNotice) => void): Promise<() => void>;
  /**
   * Calls `listener` when the master behind some locks changed (a failover, a restart, a
   * demotion), with a test of which resources it concerns. Answers a function that stops it.
   * Optional: backends of independent masters (RedLock) have no failover.
   */
  onMasterChange?(listener: (affects: (resource: string) => boolean) => void): () => void;
  /**
   * Settles once the check of the master behind `resource` that is due or under way (after a
   * reconnect, a slot move) has answered, so that a change it finds has been reported to
   * `onMasterChange`; undefined when none is. Never rejects. A renewal or extend refused right
   * after a reconnect, or sent on by a MOVED reply on a cluster, may have reached a new master
   * ahead of that check: the engine waits for it before it calls the lock taken. Called for such
   * a refusal only, so a check it finds due may be made for it. Optional, with `onMasterChange`.
   */
  masterKnown?(resource: string): Promise<void> | undefined;
  /** Ends the backend's own connections (never the caller's clients). */
  close(): Promise<void>;
}
