import { hashTag, InvalidKeyError } from '@lock/core';

/**
 * Redisson's naming rules (RedissonObject.prefixName / suffixName). The lock key itself is the
 * bare name; every auxiliary key and channel wraps the name in braces unless it already holds a
 * `{`, so that all of them hash to the lock key's cluster slot.
 */
export function prefixName(prefix: string, name: string): string {
  return name.includes('{') ? `${prefix}:${name}` : `${prefix}:{${name}}`;
}

export function suffixName(name: string, suffix: string): string {
  return name.includes('{') ? `${name}:${suffix}` : `{${name}}:${suffix}`;
}

/** Redisson's channel for RLock, fair and fenced locks (note the double underscore). */
export const lockChannel = (name: string): string => prefixName('redisson_lock__channel', name);
/** The shared channel of a read-write lock's two halves. */
export const rwChannel = (name: string): string => prefixName('redisson_rwlock', name);
export const unlockLatch = (name: string, requestId: string): string =>
  `${prefixName('redisson_unlock_latch', name)}:${requestId}`;
/** What the force-release scripts prepend to `:<field>` for every holder's attempt latches. */
export const attemptLatchPrefix = (name: string): string => prefixName('redisson_lock_attempt', name);
/** The latches of the attempts applied for one hash field (a key Redisson never reads; see attempt.lua). */
export const attemptLatches = (name: string, field: string): string => `${attemptLatchPrefix(name)}:${field}`;
export const fairQueue = (name: string): string => prefixName('redisson_lock_queue', name);
export const fairTimeouts = (name: string): string => prefixName('redisson_lock_timeout', name);
export const fenceCounter = (name: string): string => prefixName('redisson_lock_token', name);
/** Prefix of one reader's timeout keys: `<prefix>:<n>` is the key of its n-th read hold. */
export const readTimeoutPrefix = (name: string, owner: string): string =>
  suffixName(name, `${owner}:rwlock_timeout`);
/** A reader's fence, kept for its re-entries (a key Redisson never reads, living as long as the reader's holds). */
export const readFenceKey = (name: string, owner: string): string =>
  suffixName(name, `${owner}:rwlock_fence`);
/** What the read unlock script prepends to `:<field>:rwlock_timeout:<n>` for every holder. */
export const readKeyPrefix = (name: string): string => (name.includes('{') ? name : `{${name}}`);

/**
 * Refuses names Redisson cannot lock safely. On a cluster every side key and channel must hash
 * to the lock key's slot, or a command touching two of them fails with CROSSSLOT after the lock
 * was taken (Redisson's own unlock among them). They hash by the hash tag of the name as
 * `prefixName` / `suffixName` wrap it, so that tag must be what the bare name hashes by: its own
 * `{…}` tag, or the whole name when it has none. A `{` without a usable tag leaves the side keys
 * untagged; a `}` without a `{` ends the tag the braces add early (`orders}42` becomes
 * `redisson_lock__channel:{orders}42}`, which hashes "orders").
 */
export function validateName(name: string, cluster: boolean): void {
  if (typeof name !== 'string' || name.length === 0)
    throw new InvalidKeyError(name, 'expected a non-empty string');
  if (!cluster || hashTag(prefixName('redisson', name)) === (hashTag(name) ?? name)) return;
  throw new InvalidKeyError(
    name,
    name.includes('{')
      ? 'on a cluster a name containing "{" needs a non-empty {hash tag}, or its lock keys would span several slots'
      : 'on a cluster a name containing "}" needs a non-empty {hash tag}: Redisson wraps the name in {…} for its ' +
          'channel and side keys, whose tag would end at the first "}", in another slot than the lock key',
  );
}
