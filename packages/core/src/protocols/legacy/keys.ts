import { InvalidKeyError } from '../../errors.js';
import { legacyFenceCounter } from '../../fence-counter.js';
import { hashTag, refuseSiblingName, slotKey } from '../../hash-tag.js';

/** The keys of one legacy lock. */
export interface LegacyKeys {
  /** The lock itself, byte for byte the name the legacy fleets use. */
  readonly lock: string;
  /**
   * The per-key fence counter of earlier versions, `{<name>}:fence` (or `<name>:fence` when the
   * name already has a hash tag); the shared counter (`fenceCounter`, the token protocol's, so
   * fences keep increasing when a service later moves a name to that protocol) replaces it.
   */
  readonly oldCounter: string;
  /**
   * `{<name>}:owner`: a hash { owner, holds, value, fence, attempt, releases } with the lock's TTL, recording
   * which of our owners wrote `value`, its fence and how often it re-entered. Legacy fleets neither read nor write
   * it; it only counts while the lock key still holds that value, so their takeovers void it. Anything else found
   * there (another lock of that name, other data) makes acquire and inspect refuse the name.
   */
  readonly owner: string;
  /** Where our releases are announced (legacy fleets never publish, so their waiters poll). */
  readonly channel: string;
}

export function legacyKeys(resource: string): LegacyKeys {
  if (resource.length === 0) throw new InvalidKeyError(resource, 'a lock name cannot be empty');
  const slot = slotKey(resource);
  if (slot === null)
    throw new InvalidKeyError(resource, 'a key starting with "}" cannot carry a cluster hash tag');
  refuseSiblingName(resource, slot);
  return {
    lock: resource,
    oldCounter: legacyFenceCounter(slot),
    owner: `${slot}:owner`,
    channel: `${slot}:released`,
  };
}

/**
 * Refuses, before anything is written, a name whose keys would be another name's on this
 * topology. The lock key keeps its exact bytes (the legacy fleets use them), so on a cluster the
 * name itself must carry the hash tag that puts the fence counter in its slot. Off a cluster, a
 * name that is one whole tag (`{x}`) would keep its side keys where `x`, wrapped, keeps its own;
 * on a cluster `x` is refused for want of a tag, so there `{x}` has no partner and is taken.
 */
export function checkNameFor(resource: string, cluster: boolean): void {
  if (cluster) {
    if (hashTag(resource) === null)
      throw new InvalidKeyError(
        resource,
        'on a cluster a legacy lock name needs a {hash tag} so that its fence counter shares its slot, e.g. "{lock_goods}:300"',
      );
  } else if (isWholeTag(resource)) {
    // The reason names no part of the key: adapters show it to clients (InvalidKeyError.reason).
    throw new InvalidKeyError(
      resource,
      'off a cluster, a lock key (prefix included) that is one whole {hash tag} shares its owner record and release channel with the same key without the braces; add something outside them, e.g. ":lock"',
    );
  }
}

/** Whether `resource` is what `x` is wrapped into for its side keys, `{x}` (`{}` is no one's: `''` is refused). */
function isWholeTag(resource: string): boolean {
  return resource.length > 2 && slotKey(resource.slice(1, -1)) === resource;
}
