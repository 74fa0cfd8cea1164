import type { Locker } from '@lock/core';
import { expect } from 'vitest';

/** When each handler ran, by the monotonic clock. */
export class Intervals {
  readonly spans: { start: bigint; end: bigint }[] = [];

  /** Runs `work` and records when it started and ended. */
  async record<T>(work: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    try {
      return await work();
    } finally {
      this.spans.push({ start, end: process.hrtime.bigint() });
    }
  }

  /** Pairs of spans that ran at the same time. */
  overlapping(): number {
    const sorted = [...this.spans].sort((a, b) => (a.start < b.start ? -1 : 1));
    let overlaps = 0;
    for (let i = 1; i < sorted.length; i += 1) {
      if (sorted[i]!.start < sorted[i - 1]!.end) overlaps += 1;
    }
    return overlaps;
  }
}

/** A promise the test settles by hand: what a handler waits on to stay inside its lock. */
export class Gate {
  private release!: () => void;
  readonly opened = new Promise<void>((resolve) => {
    this.release = resolve;
  });

  open(): void {
    this.release();
  }

  /** Waits for `open()`, failing after `ms` so a broken lock makes the test fail rather than hang. */
  async pass(ms = 5_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`gate not opened within ${ms} ms`)), ms);
    });
    try {
      await Promise.race([this.opened, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The real locker, with every `acquire` and `using` call it received kept for the test to inspect. */
export function observed(locker: Locker): {
  locker: Locker;
  acquires: { key: string; result: Promise<unknown> }[];
} {
  const acquires: { key: string; result: Promise<unknown> }[] = [];
  const proxy = new Proxy(locker, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      if (property !== 'acquire' && property !== 'using') return value.bind(target);
      return (key: string, ...rest: unknown[]) => {
        const pending: Promise<unknown> = value.call(target, key, ...rest);
        acquires.push({
          key,
          result: pending.then(
            (done) => done,
            (error: unknown) => error,
          ),
        });
        return pending;
      };
    },
  });
  return { locker: proxy, acquires };
}

/** `promise`'s value, or `'still pending'` after `ms`: for waiting on something that must happen soon. */
export async function within<T>(promise: Promise<T>, ms = 5_000): Promise<T | 'still pending'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still pending'>((resolve) => {
    timer = setTimeout(() => resolve('still pending'), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks a `Retry-After` (s) made from a holder's `lease`: the time the lease had left at the
 * refusal, rounded up, so no less than `left` (read after the refusal) rounded up, and no more
 * than the lease. Not one exact figure: a loaded host may take a second or more from the
 * holder's acquire to the refusal. The unknown-lease answer (1) fails it while `left` > 1 s.
 */
export function expectRetryAfterFromLease(retryAfter: number, left: number | null, lease = 10_000): void {
  expect(left).toBeGreaterThan(0);
  expect(retryAfter).toBeGreaterThanOrEqual(Math.ceil(left! / 1000));
  expect(retryAfter).toBeLessThanOrEqual(lease / 1000);
}
