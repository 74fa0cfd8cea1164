import { InvalidOptionError, MAX_TTL } from '@lock/core';

/** The PHP class's three constants, checked. */
export interface LockSettings {
  /** Lease in whole seconds (`LOCK_EXPIRE`). */
  readonly expire: number;
  /** Attempts per `lock()` call (`LOCK_RETRY_MAX`). */
  readonly retryMax: number;
  /** Pause between attempts in seconds (`LOCK_SLEEP`). */
  readonly sleep: number;
}

/** Refuses, before anything is written, values the PHP class would pass on unchecked (B10). */
export function checkSettings(settings: LockSettings): LockSettings {
  const { expire, retryMax, sleep } = settings;
  if (!Number.isSafeInteger(expire) || expire < 1 || expire > 2_000_000) {
    throw new InvalidOptionError(
      'LOCK_EXPIRE',
      expire,
      'a whole number of seconds from 1 to 2000000, as the `expire` option or the constant',
    );
  }
  if (!Number.isSafeInteger(retryMax) || retryMax < 1) {
    throw new InvalidOptionError(
      'LOCK_RETRY_MAX',
      retryMax,
      'a whole number of attempts, 1 or more, as the `retryMax` option or the constant',
    );
  }
  // Longer than a Node timer takes, the pause would be cut to nothing.
  if (!Number.isFinite(sleep) || sleep < 0 || sleep * 1_000 > MAX_TTL) {
    throw new InvalidOptionError(
      'LOCK_SLEEP',
      sleep,
      `a number of seconds from 0 to ${Math.floor(MAX_TTL / 1_000)}, as the \`sleep\` option or the constant`,
    );
  }
  return settings;
}
