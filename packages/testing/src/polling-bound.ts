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

/**
 * How long after a release a waiter whose release message was lost may take to acquire, as
 * `@lock/core`'s README bounds it (Options, `retry.max`; "When Redis is down"): at most the
 * longest backoff plus two `commandTimeout`s (an attempt, a subscription made again) between two
 * attempts, then one more `commandTimeout` for the attempt that finds the lock free. `margin`
 * (default 1 s) is for a loaded 2-core host.
 */
export function lostMessageBound(retryMax: number, commandTimeout: number, margin = 1_000): number {
  return retryMax + 3 * commandTimeout + margin;
}
