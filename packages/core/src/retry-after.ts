/**
 * `Retry-After` when the holder's remaining lease is unknown (-1: Redis could not say) and when
 * Redis itself is unavailable, in seconds: what the HTTP adapters and the GraphQL directive answer.
 */
export const RETRY_AFTER_UNKNOWN = 1;

/** Whole seconds until the holder's lease ends, rounded up and at least 1; `RETRY_AFTER_UNKNOWN` for -1. */
export function retryAfterSeconds(remainingMs: number): number {
  if (!(remainingMs >= 0)) return RETRY_AFTER_UNKNOWN;
  return Math.max(1, Math.ceil(remainingMs / 1000));
}
