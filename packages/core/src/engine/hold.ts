import type { LockLostError } from '../errors.js';

/**
 * What this locker knows about one lock it holds as one owner: the state every handle of that
 * hold shares (re-entrant acquisitions of the same owner add handles, not holds).
 */
export class Hold {
  /** Made on first use of `signal`: most holds are released without anyone reading it. */
  private controller: AbortController | undefined;
  /** Handles not yet released. */
  handles = 1;
  /** When the last renewal (or the acquisition) was sent; the next renewal is due ttl/3 later. */
  renewedAt: number;
  renewing = false;
  lost: LockLostError | undefined;

  constructor(
    readonly key: string,
    readonly resource: string,
    readonly owner: string,
    public token: string,
    /** Lease applied on every renewal, in ms. */
    public ttl: number,
    /** Whether the watchdog renews this hold. */
    public renew: boolean,
    /** Monotonic deadline until which the lock is certainly held. */
    public validUntil: number,
    sentAt: number,
    readonly acquiredAt: number,
  ) {
    this.renewedAt = sentAt;
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

  get id(): string {
    return holdId(this.resource, this.owner);
  }

  /** When the watchdog should renew it: a third of the lease after the last renewal was sent. */
  get renewDue(): number {
    return this.renewedAt + Math.floor(this.ttl / 3);
  }
}

export function holdId(resource: string, owner: string): string {
  return `${owner}\u0000${resource}`;
}
