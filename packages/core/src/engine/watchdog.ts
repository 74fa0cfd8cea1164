import type { LockBackend } from '../backend.js';
import type { LockLostReason } from '../errors.js';
import type { Hold } from './hold.js';

/** What the watchdog reports back to the engine. */
export interface WatchdogEvents {
  renewed(hold: Hold): void;
  lost(hold: Hold, reason: LockLostReason, cause?: unknown): void;
}

/**
 * One timer per locker for every hold: it renews the holds that are due (in batches: each due
 * hold is renewed together with the holds due within the next sixth of their lease, so 10k
 * locks cost a handful of round trips per interval) and declares lost every hold whose
 * validity ended. The timer is unref'd: it never keeps a process alive.
 */
export class Watchdog {
  private readonly holds = new Set<Hold>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly backend: LockBackend,
    private readonly clock: () => number,
    private readonly events: WatchdogEvents,
  ) {}

  watch(hold: Hold): void {
    this.holds.add(hold);
    this.schedule(this.wakeAt(hold));
  }

  forget(hold: Hold): void {
    this.holds.delete(hold);
    if (this.holds.size === 0) this.stop();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** Runs a check now, e.g. after `lock.extend()` changed a deadline. */
  reschedule(hold: Hold): void {
    if (this.holds.has(hold)) this.schedule(this.wakeAt(hold));
  }

  private wakeAt(hold: Hold): number {
    return hold.renew && !hold.renewing ? Math.min(hold.renewDue, hold.validUntil) : hold.validUntil;
  }

  private schedule(at: number): void {
    if (at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, at - this.clock()));
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
        this.events.lost(hold, 'expired');
        continue;
      }
      if (hold.renew && !hold.renewing && now >= hold.renewDue - Math.floor(hold.ttl / 6)) {
        hold.renewing = true;
        const batch = due.get(hold.ttl) ?? [];
        batch.push(hold);
        due.set(hold.ttl, batch);
      }
      next = Math.min(next, this.wakeAt(hold));
    }
    for (const [ttl, batch] of due) void this.renew(batch, ttl);
    if (next < Number.POSITIVE_INFINITY) this.schedule(next);
  }

  private async renew(batch: Hold[], ttl: number): Promise<void> {
    const sentAt = this.clock();
    let results: Awaited<ReturnType<LockBackend['extendMany']>>;
    try {
      results = await this.backend.extendMany(batch, ttl);
    } catch (error) {
      for (const hold of batch) this.finish(hold, () => this.events.lost(hold, 'renewal-failed', error));
      return;
    }
    batch.forEach((hold, i) => {
      const result = results[i];
      this.finish(hold, () => {
        if (!result) return this.events.lost(hold, 'taken');
        hold.token = result.token;
        hold.renewedAt = sentAt;
        hold.validUntil = sentAt + result.validity;
        this.events.renewed(hold);
      });
    });
  }

  private finish(hold: Hold, settle: () => void): void {
    hold.renewing = false;
    if (!this.holds.has(hold) || hold.lost) return;
    settle();
    if (this.holds.has(hold)) this.schedule(this.wakeAt(hold));
  }
}
