import { InvalidKeyError } from '../../errors.js';
import { hashTag, refuseSiblingName, slotKey } from '../../hash-tag.js';

/** The keys of one legacy lock. */
export interface LegacyKeys {
  /** The lock itself, byte for byte the name the legacy fleets use. */
  readonly lock: string;
  /**
   * The fence counter `{<name>}:fence` (or `<name>:fence` when the name already has a hash
   * tag): the one key that never expires. Legacy fleets only ever read the lock key, and the
   * braces keep the name apart from anything they lock. It is the token protocol's counter
   * name, so fences keep increasing when a service later moves a name to that protocol.
   */
  readonly fence: string;
  /**
   * `{<name>}:owner`: a hash { owner, holds, value } with the lock's TTL, recording which of our
   * owners wrote `value` and how often it re-entered. Legacy fleets neither read nor write it;
   * it only counts while the lock key still holds that value, so their takeovers void it.
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
  return { lock: resource, fence: `${slot}:fence`, owner: `${slot}:owner`, channel: `${slot}:released` };
}

/**
 * The lock key cannot be wrapped in braces (the legacy fleets use its exact bytes), so on a
 * cluster the name itself must carry the hash tag that puts the fence counter in its slot.
 */
export function requireHashTagOnCluster(resource: string, cluster: boolean): void {
  if (cluster && hashTag(resource) === null) {
    throw new InvalidKeyError(
      resource,
      'on a cluster a legacy lock name needs a {hash tag} so that its fence counter shares its slot, e.g. "{lock_goods}:300"',
    );
  }
}
