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

/** What the caller wrote to set each setting: the option's name, or the constant's. */
export type SettingNames = Readonly<Record<keyof LockSettings, string>>;

const CONSTANTS: SettingNames = { expire: 'LOCK_EXPIRE', retryMax: 'LOCK_RETRY_MAX', sleep: 'LOCK_SLEEP' };

/** The options' names for the settings given as options, the constants' for the others. */
export function settingNames(options: Partial<LockSettings>): SettingNames {
  const named = (name: keyof LockSettings) => (options[name] === undefined ? CONSTANTS[name] : name);
  return { expire: named('expire'), retryMax: named('retryMax'), sleep: named('sleep') };
}

/**
 * Refuses, before anything is written, values the PHP class would pass on unchecked (B10),
 * naming each as the caller set it: by default the constants, as an instance's fields are.
 */
export function checkSettings(settings: LockSettings, names: SettingNames = CONSTANTS): LockSettings {
  const { expire, retryMax, sleep } = settings;
  if (!Number.isSafeInteger(expire) || expire < 1 || expire > 2_000_000)
    throw new InvalidOptionError(names.expire, expire, 'a whole number of seconds from 1 to 2000000');
  if (!Number.isSafeInteger(retryMax) || retryMax < 1)
    throw new InvalidOptionError(names.retryMax, retryMax, 'a whole number of attempts, 1 or more');
  // Longer than a Node timer takes, the pause would be cut to nothing.
  if (!Number.isFinite(sleep) || sleep < 0 || sleep * 1_000 > MAX_TTL) {
    throw new InvalidOptionError(
      names.sleep,
      sleep,
      `a number of seconds from 0 to ${Math.floor(MAX_TTL / 1_000)}`,
    );
  }
  return settings;
}
