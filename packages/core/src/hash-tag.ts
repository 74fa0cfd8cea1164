import { InvalidKeyError } from './errors.js';

/**
 * Redis Cluster hashes only the part of a key between the first `{` and the first `}` after it,
 * when that part is not empty. These helpers let a protocol derive sibling keys (fence counter,
 * channel) that are guaranteed to land in the same slot as the lock key.
 */
export function hashTag(key: string): string | null {
  const open = key.indexOf('{');
  if (open === -1) return null;
  const close = key.indexOf('}', open + 1);
  if (close === -1 || close === open + 1) return null;
  return key.slice(open + 1, close);
}

/**
 * The key itself when it already carries a hash tag (the caller chose its slot), else the key
 * wrapped in braces so that `slotKey(k) + suffix` always shares a slot with `slotKey(k)`.
 * Returns null for a key that cannot be tagged (it starts with `}`, so wrapping yields `{}`).
 */
export function slotKey(key: string): string | null {
  if (hashTag(key) !== null) return key;
  if (key.startsWith('}')) return null;
  return `{${key}}`;
}

/** The cluster slot of a key (CRC16/XMODEM of its hash tag or whole key, modulo 16384). */
export function keySlot(key: string): number {
  const bytes = Buffer.from(hashTag(key) ?? key);
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++)
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** The keys a protocol keeps beside a lock, by suffix, and what each is. */
const SIBLING_KEYS: readonly (readonly [suffix: string, what: string])[] = [
  [':fence', "another lock's fence counter (before the shared one)"],
  [':fences:epoch', 'the stamp of a shared fence counter'],
  [':fences', 'a shared fence counter'],
  [':owner', "another lock's owner record"],
  [':released', "another lock's release channel"],
  [':queue', "another lock's waiter queue"],
  [':waiters', "another lock's waiter registrations"],
];

/**
 * Refuses a lock name that is itself another lock's sibling key: a name that carries its own
 * hash tag is used as is, so `{a}:fence` would be both a lock and the fence counter of `{a}`.
 */
export function refuseSiblingName(resource: string, lockKey: string): void {
  if (lockKey !== resource) return;
  const sibling = SIBLING_KEYS.find(([suffix]) => resource.endsWith(suffix));
  if (sibling) {
    throw new InvalidKeyError(resource, `a hash-tagged name ending in "${sibling[0]}" is ${sibling[1]}`);
  }
}
