import type { RetryOptions } from '../types.js';

/** Delay before attempt `attempt + 1`: exponential from `base`, capped at `max`, partly random. */
export function backoff(attempt: number, retry: Required<RetryOptions>): number {
  const ceiling = Math.min(retry.max, retry.base * 2 ** Math.min(attempt, 30));
  return Math.max(1, Math.round(ceiling * (1 - retry.jitter * Math.random())));
}
