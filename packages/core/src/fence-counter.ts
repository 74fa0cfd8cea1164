import { keySlot } from './hash-tag.js';

/** Slot tags found so far, per namespace: the search below runs once per slot in use. */
const tags = new Map<string, Map<number, string>>();

/**
 * The fence counter of a lock: one counter shared by every lock of a namespace (the resource's
 * first `:`-terminated segment, usually the locker's prefix), and on a cluster one per slot of
 * it, so a service that locks a key per order id leaves a bounded number of counters (one, or
 * at most 16 384 on a cluster) instead of one per key forever. Fences still strictly increase
 * per key: every first acquisition increments the counter its key shares with others.
 *
 * The name starts with `{<namespace>`, so an ACL key pattern for the lock keys (`~{lock:*`)
 * covers it. On a cluster its hash tag is `<namespace>#<n>`, the first `n` landing in the lock
 * key's slot.
 */
export function fenceCounter(resource: string, lockKey: string, cluster: boolean): string {
  const namespace = resource.slice(0, resource.indexOf(':') + 1).replace(/[{}]/g, '');
  if (!cluster) return `{${namespace}#}:fences`;
  const slot = keySlot(lockKey);
  let bySlot = tags.get(namespace);
  if (!bySlot) {
    bySlot = new Map();
    tags.set(namespace, bySlot);
  }
  let tag = bySlot.get(slot);
  for (let n = 0; tag === undefined; n++) {
    const candidate = `${namespace}#${n}`;
    if (keySlot(`{${candidate}}`) === slot) tag = candidate;
  }
  bySlot.set(slot, tag);
  return `{${tag}}:fences`;
}

/**
 * The per-key counter earlier versions kept (`{<key>}:fence`). A first acquisition that finds it
 * raises the shared counter to it and deletes it, so fences never go backwards across the upgrade.
 */
export function legacyFenceCounter(slotKey: string): string {
  return `${slotKey}:fence`;
}
