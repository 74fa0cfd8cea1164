/** The backoff a waiter polls with, as `@lock/core`'s `retry` option gives it. */
export interface PollingBackoff {
  /** First delay in ms. */
  readonly base: number;
  /** Largest delay in ms. */
  readonly max: number;
  /** Fraction of each delay drawn at random, 0 to 1. */
  readonly jitter: number;
}

/**
 * The most attempts a waiter polling with `retry` can send in `waited` ms when nothing wakes it:
 * the first attempt, the one right after it subscribed, then one per backoff delay, each at
 * least (1 - jitter) of its ceiling; each of `wakeUps` release messages adds at most one. A
 * waiter in a busy loop (retrying at once once its subscription is gone) exceeds it.
 */
export function pollingAttemptsBound(retry: PollingBackoff, waited: number, wakeUps = 0): number {
  let attempts = 2 + wakeUps;
  let elapsed = 0;
  for (let n = 0; elapsed <= waited; n++) {
    elapsed += Math.min(retry.max, retry.base * 2 ** n) * (1 - retry.jitter);
    attempts += 1;
  }
  return attempts;
}
