import { InvalidOptionError } from '../../errors.js';

/** Unit of the timestamp stored in the key: `'ms'` for JedisLock-style fleets, `'s'` for the PHP fleet. */
export type LegacyUnit = 'ms' | 's';

/** Redis refuses PEXPIRE beyond what fits a signed 64-bit ms deadline; locks stay far below. */
export const MAX_TTL = 2 ** 31 - 1;

export function msPerUnit(unit: LegacyUnit): number {
  return unit === 's' ? 1_000 : 1;
}

/**
 * Checks a ttl (ms) before anything is written and converts it to the lease in the stored unit
 * (what is added to now to make the value). In seconds
 * the PHP fleet writes `now + expire + 1` with a TTL of `expire + 1`, so a ttl of `expire`
 * whole seconds becomes a lease of `expire + 1` seconds; the value then never claims less
 * than the ttl, and the engine's validity (the ttl) ends before any reader's deadline.
 */
export function leaseUnits(unit: LegacyUnit, ttl: number): number {
  if (unit === 's') {
    if (!Number.isSafeInteger(ttl) || ttl < 1_000 || ttl % 1_000 !== 0 || ttl > MAX_TTL) {
      throw new InvalidOptionError(
        'ttl',
        ttl,
        'whole seconds in ms (1000, 2000, …) for the legacy protocol in seconds',
      );
    }
    return ttl / 1_000 + 1;
  }
  if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_TTL) {
    throw new InvalidOptionError('ttl', ttl, `a whole number of ms from 1 to ${MAX_TTL}`);
  }
  return ttl;
}

/**
 * How much later than its TTL a value we write claims the lock ends, in the stored unit: a peer
 * whose clock runs `peerClockAhead` ms ahead of the server reads our deadline that much early,
 * so it must see that much more. Rounded up, so whole seconds never claim less than asked.
 */
export function paddingUnits(unit: LegacyUnit, peerClockAhead: number): number {
  return Math.ceil(peerClockAhead / msPerUnit(unit));
}
