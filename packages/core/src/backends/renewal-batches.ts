import { keySlot } from '../hash-tag.js';
import type { LockProtocol, RenewalItem } from '../protocol.js';

/** Renewals of this many locks share one script call. */
const RENEWAL_CHUNK = 500;

/**
 * Renewal batches, each one script call on one node: chunks of one slot each on a cluster
 * (single items when the protocol cannot say its key). The watchdog bounds each by its own
 * deadline, so a slow node fails only the batches it serves.
 */
export function renewalBatches<T extends RenewalItem>(
  items: readonly T[],
  protocol: LockProtocol,
  cluster: boolean,
): T[][] {
  const groups = new Map<number | T, T[]>();
  for (const item of items) {
    const group = !cluster
      ? 0
      : protocol.lockKey && protocol.extendMany
        ? keySlot(protocol.lockKey(item.resource))
        : item;
    const members = groups.get(group) ?? [];
    members.push(item);
    groups.set(group, members);
  }
  const batches: T[][] = [];
  for (const members of groups.values()) {
    for (let i = 0; i < members.length; i += RENEWAL_CHUNK) batches.push(members.slice(i, i + RENEWAL_CHUNK));
  }
  return batches;
}
