import { type InspectOptions, inspect } from 'node:util';
import { NotOwnerError } from '../errors.js';
import type { AttemptContext, ReleaseReply } from '../protocol.js';
import type { Lock } from '../types.js';
import type { Hold } from './hold.js';

/** What a handle asks of the engine that issued it. */
export interface HoldOwner {
  /** Declares the hold lost when its validity has ended, so no reader sees a stale `signal` after a stall. */
  checkValidity(hold: Hold): void;
  /** Ms left until the hold's `validUntil`, 0 once it has passed or the hold is lost. */
  remaining(hold: Hold): number;
  assertHeld(hold: Hold): void;
  extend(hold: Hold, ttl: number | undefined): Promise<void>;
  /** A new release id: unique across processes, 32 hex digits (the form of Redisson's request ids). */
  releaseId(): string;
  /**
   * Gives up one handle of `hold`; `id` names this handle's release, the same on every retry.
   * `renews`: the handle asked for renewal, and this is its first release call. `first`: this is
   * its first release call (no earlier one, unanswered, may have landed since). `attempt`: the
   * acquire attempt that granted the handle, when the hold keeps it (`Hold.unreleased`).
   */
  release(
    hold: Hold,
    id: string,
    renews: boolean,
    first: boolean,
    attempt?: AttemptContext,
  ): Promise<ReleaseReply>;
}

/** One acquisition. Re-entrant acquisitions of one owner share a `Hold`, each with its own handle. */
export class LockHandle implements Lock {
  private releasing: Promise<ReleaseReply> | undefined;
  /** Made by the first release call and sent by every retry of it: a release that landed is not applied twice. */
  private releaseId: string | undefined;

  constructor(
    private readonly engine: HoldOwner,
    /** The hold this handle shares with the other handles of its owner. */
    readonly hold: Hold,
    readonly fence: number,
    readonly holds: number,
    /** It asked for renewal, and its release has not been called yet. */
    private renews: boolean,
    /** The attempt that granted it, while the hold keeps it for an undo at a loss (`Hold.unreleased`). */
    private readonly attempt?: AttemptContext,
  ) {}

  get key(): string {
    return this.hold.key;
  }

  get owner(): string {
    return this.hold.owner;
  }

  get validUntil(): number {
    return this.hold.validUntil;
  }

  /**
   * Once its release was asked for, a handle no longer vouches for the lock, even when that
   * release failed: unanswered, it may have freed the lock all the same.
   */
  private get releaseAsked(): boolean {
    return this.releaseId !== undefined;
  }

  remaining(): number {
    return this.releaseAsked ? 0 : this.engine.remaining(this.hold);
  }

  get signal(): AbortSignal {
    this.engine.checkValidity(this.hold);
    return this.hold.signal;
  }

  get released(): boolean {
    // A lease run out by our clock counts before the timer that declares it has run.
    if (!this.releaseAsked) this.engine.checkValidity(this.hold);
    return this.over;
  }

  /** Released or lost, as known now (nothing checked). */
  private get over(): boolean {
    return this.releaseAsked || this.hold.lost !== undefined;
  }

  assertHeld(): void {
    if (this.releaseAsked) throw new NotOwnerError(this.key, this.owner);
    this.engine.assertHeld(this.hold);
  }

  async extend(ttl?: number): Promise<void> {
    if (this.releaseAsked) throw new NotOwnerError(this.key, this.owner);
    await this.engine.extend(this.hold, ttl);
  }

  /** Idempotent once it succeeded; a release that failed (Redis unreachable) may be called again. */
  release(): Promise<ReleaseReply> {
    if (!this.releasing) {
      const first = this.releaseId === undefined;
      this.releaseId ??= this.engine.releaseId();
      const releasing = this.engine.release(this.hold, this.releaseId, this.renews, first, this.attempt);
      this.renews = false;
      this.releasing = releasing;
      releasing.catch(() => {
        if (this.releasing === releasing) this.releasing = undefined;
      });
    }
    return this.releasing;
  }

  /** Its fields, not the engine's and the hold's: chai's printer would call the engine's `inspect(key)` with a depth. */
  [inspect.custom](_depth: number, options: InspectOptions, print: typeof inspect): string {
    // `over`, not `released`: printing a handle must not declare its loss.
    const { key, owner, fence, holds, over: released } = this;
    return `LockHandle ${print({ key, owner, fence, holds, released }, options)}`;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
