import type { AcquireReply } from '@lock/core';

/**
 * Reads an acquire script's `{1, holds, fence}` or `{0, pttl}` reply. The token is the lease,
 * which a re-entrant unlock re-applies.
 */
export function acquireReply(reply: unknown, lease: number): AcquireReply {
  const [taken, value, fence] = reply as [number, number, number];
  if (taken === 1) return { acquired: true, holds: value, fence, token: String(lease) };
  return { acquired: false, remaining: value < 0 ? -1 : value };
}
