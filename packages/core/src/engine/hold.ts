import type { LockLostError } from '../errors.js';
import type { AttemptContext, ReleaseReply } from '../protocol.js';

/** Holds made by this process so far: each hold's `number`. */
let made = 0;

/**
 * What this locker knows about one lock it holds as one owner: the state every handle of that
 * hold shares (re-entrant acquisitions of the same owner add handles, not holds).
 */
export class Hold {
  /** Unique in the process: what events name the hold by (an owner and a key may be held twice, by two lockers). */
  readonly number = ++made;
  /** Made on first use of `signal`: most holds are released without anyone reading it. */
  private controller: AbortController | undefined;
  /** The last operation queued by `serial`, while one runs. */
  private tail: Promise<void> | undefined;
  /** Handles not yet released. */
  handles = 1;
  /**
   * Handles not yet released that asked for renewal. A re-entry that asked for it renews the
   * hold only while it is held: the outer acquisition's fixed lease holds again after it.
   */
  renewers: number;
  /** When the last renewal (or the acquisition) was sent; the next renewal is due ttl/3 later. */
  renewedAt: number;
  renewing = false;
  /** Why the last renewal failed, while it is being retried; the loss reason if validity ends first. */
  renewalError: unknown;
  lost: LockLostError | undefined;
  /**
   * What each release given up on (by its id) answered when it landed after all: a retry of it
   * is answered so and not sent again, as a copy sent once the format no longer recalls its id
   * would take off another hold. Other handles' releases answer for themselves. Made on the
   * first, seldom: not for every acquisition.
   */
  private lateReleases: Map<string, ReleaseReply> | undefined;
  /** How `close()`'s release of the handles left ended: what a release called after it answers. */
  closedRelease: PromiseSettledResult<ReleaseReply> | undefined;
  /**
   * The ids of the releases `close()` answers for: the failed ones it sent again, and those first
   * called after it (answered by its releases of the handles left). A retry of another (one on
   * the wire when `close()` was called, failing after) is not among them: it is sent.
   */
  closedIds: Set<string> | undefined;
  /** Replicas confirmed the grant (WAIT): a failover keeps the lock, so a master change does not end it. */
  confirmed = false;
  /**
   * Its owner was made for the call that took it, and no hold granted afresh since (a re-entry
   * Redis no longer counted) goes by that name: a release by the name takes off this hold alone.
   */
  fresh = false;
  /** A release given up on landed after all and ended the hold: a retry of it reports nothing again. */
  endedLate = false;
  /**
   * The attempts that granted its handles whose release was never called, for an owner that is
   * not fresh: a loss undoes each (see `Engine.lose`). Made on the first such handle.
   */
  unreleased: Set<AttemptContext> | undefined;
  /**
   * The ids of releases Redis did not answer, whose handles count again until retried: they may
   * have landed, so `close()` sends each again under its own id, which a format applies once.
   */
  failedReleases: Set<string> | undefined;

  constructor(
    readonly key: string,
    readonly resource: string,
    readonly owner: string,
    public token: string,
    /** The fence its first acquisition handed out (see `LockBackend.fenceKeptOnReentry`). */
    readonly fence: number,
    /** Lease applied on every renewal, in ms. */
    public ttl: number,
    /** Whether the acquisition that made it asked for renewal. */
    renew: boolean,
    /** Monotonic deadline until which the lock is certainly held. */
    public validUntil: number,
    sentAt: number,
    readonly acquiredAt: number,
  ) {
    this.renewedAt = sentAt;
    this.renewers = renew ? 1 : 0;
  }

  /** Whether the watchdog renews this hold. */
  get renew(): boolean {
    return this.renewers > 0;
  }

  /** Aborted with the `LockLostError` once the hold is lost. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.lost && !this.controller.signal.aborted) this.controller.abort(this.lost);
    return this.controller.signal;
  }

  /** Marks the hold lost and aborts its signal, if anyone holds it. */
  lose(error: LockLostError): void {
    this.lost = error;
    this.controller?.abort(error);
  }

  /** Whether an operation queued by `serial` is running. */
  get busy(): boolean {
    return this.tail !== undefined;
  }

  /**
   * Runs `operation` after every operation queued before it has settled. Extend, renewal,
   * re-entry and release of one hold go through here: formats that rewrite their token on
   * renewal (legacy) must never send a token an operation in flight is replacing.
   */
  serial<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.tail ? this.tail.then(operation) : operation();
    const done = () => {
      if (this.tail === tail) this.tail = undefined;
    };
    const tail: Promise<void> = result.then(done, done);
    this.tail = tail;
    return result;
  }

  /** What the release `id`, given up on, answered when it landed after all; undefined if it has not. */
  lateRelease(id: string): ReleaseReply | undefined {
    return this.lateReleases?.get(id);
  }

  /** Records what the release `id`, given up on, answered when it landed; a copy's 'not-owner' after its 'released' changes nothing. */
  landedLate(id: string, reply: ReleaseReply): void {
    this.lateReleases ??= new Map();
    if (this.lateReleases.get(id) !== 'released') this.lateReleases.set(id, reply);
  }

  get id(): string {
    return holdId(this.resource, this.owner);
  }

  /**
   * When the watchdog should renew it: a third of the lease after the last renewal was sent,
   * or sooner when the server's deadline is nearer than a full lease from then (a re-entry
   * that shortened the lease, a renewal being retried).
   */
  get renewDue(): number {
    return Math.min(
      this.renewedAt + Math.floor(this.ttl / 3),
      this.validUntil - Math.floor((2 * this.ttl) / 3),
    );
  }
}

/** Owners and keys may hold any character: the owner's length keeps every pair's id its own. */
export function holdId(resource: string, owner: string): string {
  return `${owner.length}:${owner}${resource}`;
}
