import type { LockBackend } from '../backend.js';
import { renewalBatches } from '../backends/renewal-batches.js';
import type { LockLostReason } from '../errors.js';
import { redacted, withDeadline } from './deadline.js';
import { detached } from './detached.js';
import { channels } from './events.js';
import type { Hold } from './hold.js';

/** What the watchdog reports back to the engine. */
export interface WatchdogEvents {
  renewed(hold: Hold): void;
  /** A renewal Redis refused: the engine ends the hold, waiting up to `within` ms to tell why. */
  refused(hold: Hold, within: number): Promise<void>;
  lost(hold: Hold, reason: LockLostReason, cause?: unknown): void;
}

/**
 * Delay before a failed renewal is tried again: a tenth of the lease, and at most a third of the
 * validity left, so that a short validity (a lock handed over for the waiter's registration
 * lease) still sees retries before it ends; never below RETRY_MIN_MS.
 */
const RETRY_FRACTION = 10;
const RETRY_WITHIN_VALIDITY = 3;
const RETRY_MIN_MS = 10;

/**
 * One timer per locker for every hold: it renews the holds that are due (in batches: each due
 * hold is renewed together with the holds due within the next sixth of their lease, so 10k
 * locks cost a handful of round trips per interval) and declares lost every hold whose
 * validity ended. Each batch (one script call on one node) has its own deadline, so a slow or
 * failing node fails only the holds it serves. A renewal that fails (Redis unreachable, too
 * slow) is retried while the hold is still valid; only when its validity ends is it lost. The
 * timer is unref'd: it never keeps a process alive.
 */
export class Watchdog {
  private readonly holds = new Set<Hold>();
  private readonly retryAt = new WeakMap<Hold, number>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly backend: LockBackend,
    private readonly clock: () => number,
    private readonly timeout: number,
    private readonly events: WatchdogEvents,
  ) {}

  watch(hold: Hold): void {
    this.holds.add(hold);
    this.schedule(this.wakeAt(hold));
  }

  /**
   * The timer stays armed when the last hold goes (it is unref'd, and finds nothing to do): a
   * locker that takes and releases one lock at a time then re-arms it once per lease, not per lock.
   */
  forget(hold: Hold): void {
    this.holds.delete(hold);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /**
   * Renews `hold` at once instead of on its schedule, when its lease on the server is in doubt
   * (the master changed). A renewal in flight or waiting to retry keeps its turn.
   */
  renewNow(hold: Hold): void {
    if (!hold.renew) return;
    hold.renewedAt = Number.NEGATIVE_INFINITY;
    this.reschedule(hold);
  }

  /** Runs a check when `hold` next needs one, e.g. after `lock.extend()` or a re-entry moved its deadline. */
  reschedule(hold: Hold): void {
    if (this.holds.has(hold)) this.schedule(this.wakeAt(hold));
  }

  private renewAt(hold: Hold): number {
    return Math.max(hold.renewDue, this.retryAt.get(hold) ?? Number.NEGATIVE_INFINITY);
  }

  /** Due, or within a sixth of its lease of being due (so it shares this round), and not waiting to retry. */
  private isDue(hold: Hold, now: number): boolean {
    const retryAt = this.retryAt.get(hold);
    return (retryAt === undefined || now >= retryAt) && now >= hold.renewDue - Math.floor(hold.ttl / 6);
  }

  private wakeAt(hold: Hold): number {
    return hold.renew && !hold.renewing ? Math.min(this.renewAt(hold), hold.validUntil) : hold.validUntil;
  }

  private schedule(at: number): void {
    if (at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    // Detached from the call that armed it, and from the one that made the locker (a locker made
    // on first use is made inside a request): renewals are never traced in a request long ended.
    this.timer = detached(() => setTimeout(() => this.tick(), Math.max(0, at - this.clock())));
    this.timer.unref();
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.clock();
    const due = new Map<number, Hold[]>();
    let next = Number.POSITIVE_INFINITY;
    for (const hold of this.holds) {
      if (now >= hold.validUntil) {
        if (hold.renewalError === undefined) this.events.lost(hold, 'expired');
        else this.events.lost(hold, 'renewal-failed', hold.renewalError);
        continue;
      }
      if (hold.renew && !hold.renewing && this.isDue(hold, now)) {
        if (hold.busy) {
          // An extend, re-entry or release is in flight: it settles the hold's token first.
          this.retryAt.set(hold, now + RETRY_MIN_MS);
        } else {
          hold.renewing = true;
          const batch = due.get(hold.ttl) ?? [];
          batch.push(hold);
          due.set(hold.ttl, batch);
        }
      }
      next = Math.min(next, this.wakeAt(hold));
    }
    for (const [ttl, holds] of due) {
      for (const batch of renewalBatches(holds, this.backend.protocol, this.backend.cluster))
        this.renew(batch, ttl);
    }
    if (next < Number.POSITIVE_INFINITY) this.schedule(next);
  }

  private renew(batch: Hold[], ttl: number): void {
    const sentAt = this.clock();
    const round = withDeadline(this.backend.extendMany(batch, ttl), this.timeout);
    if (channels.renew.hasSubscribers) {
      const publish = (failed: boolean) =>
        channels.renew.publish({ protocol: this.backend.protocol.name, size: batch.length, ttl, failed });
      round.then(
        (results) => publish(results.some((result) => result instanceof Error)),
        () => publish(true),
      );
    }
    // Each hold waits for the round in its own queue, so a release or extend of it waits too.
    batch.forEach((hold, i) => {
      void hold.serial(() =>
        round.then(
          (results) => {
            const result = results[i] ?? null;
            if (result instanceof Error) return this.finish(hold, () => this.failed(hold, result));
            // This hold alone, not the batch's others, waits while the engine tells why.
            if (!result)
              return this.events.refused(hold, this.timeout).then(() => {
                hold.renewing = false;
              });
            // Even for a hold lost meanwhile: `close()` releases it next, with the token Redis has now.
            hold.token = result.token;
            this.finish(hold, () => this.renewed(hold, result, sentAt));
          },
          (error: unknown) => this.finish(hold, () => this.failed(hold, error)),
        ),
      );
    });
  }

  private renewed(hold: Hold, result: { token: string; validity: number }, sentAt: number): void {
    hold.renewedAt = sentAt;
    hold.renewalError = undefined;
    this.retryAt.delete(hold);
    hold.validUntil = sentAt + result.validity;
    this.events.renewed(hold);
  }

  private failed(hold: Hold, error: unknown): void {
    // Kept as the cause of the loss it may turn into, which callers and events see.
    hold.renewalError = redacted(error);
    const now = this.clock();
    const delay = Math.min(hold.ttl / RETRY_FRACTION, (hold.validUntil - now) / RETRY_WITHIN_VALIDITY);
    this.retryAt.set(hold, now + Math.max(RETRY_MIN_MS, Math.floor(delay)));
  }

  private finish(hold: Hold, settle: () => void): void {
    hold.renewing = false;
    if (!this.holds.has(hold) || hold.lost) return;
    settle();
    if (this.holds.has(hold)) this.schedule(this.wakeAt(hold));
  }
}
