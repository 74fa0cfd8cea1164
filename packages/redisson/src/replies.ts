import type { AcquireReply } from '@lock/core';

/**
 * Reads an acquire script's `{1, holds, fence, ttl}` or `{0, pttl}` reply. The token is the
 * lease, which a re-entrant unlock re-applies; `ttl` is what the server will honour, longer
 * than the lease when a re-entry kept an earlier hold's.
 */
export function acquireReply(reply: unknown, lease: number): AcquireReply {
  const [taken, value, fence, ttl] = reply as [number, number, number, number?];
  if (taken !== 1) return { acquired: false, remaining: value < 0 ? -1 : value };
  const granted = { acquired: true, holds: value, fence, token: String(lease) } as const;
  return ttl === undefined || ttl === lease ? granted : { ...granted, ttl };
}
