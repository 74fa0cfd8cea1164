import { InvalidKeyError, InvalidOptionError } from '../errors.js';
import type { AcquireOptions, RetryOptions, UsingOptions } from '../types.js';
import { isWellFormedValue, LONE_SURROGATE_REFUSAL } from '../well-formed.js';

/** Largest ttl Redis timers and Node timers both accept. */
export const MAX_TTL = 2 ** 31 - 1;
/** Shortest ttl: a lease must outlast the round trip that takes it, with room to use it. */
export const MIN_TTL = 10;
/** Longest key accepted, in UTF-8 bytes: long enough for any sane name, short of abuse. */
export const MAX_KEY_BYTES = 4096;

/** Prepended to every key to form the Redis resource name. */
export const DEFAULT_PREFIX = 'lock:';
export const DEFAULT_TTL = 30_000;
export const DEFAULT_WAIT = 10_000;
export const DEFAULT_COMMAND_TIMEOUT = 500;
export const DEFAULT_RETRY: Required<RetryOptions> = {
  base: 50,
  max: 1_000,
  jitter: 0.5,
  attempts: Number.POSITIVE_INFINITY,
};

/**
 * What an alias of `refuseUnknown` points to: the known name, or a note for a name whose
 * meaning differs here (units, another method), with the name it stands for when there is one
 * (suggested only where that name is known: a method may not take it).
 */
export type OptionAlias = string | { readonly meant?: string; readonly note: string };

/**
 * Throws `InvalidOptionError` when `options` is not an object, or naming any key of it not in
 * `known`, with the known one it likely stands for: one a letter or two away, or its entry in
 * `aliases` (a name of another library, a plural), suggested only when it is in `known` (an
 * alias's note is shown either way). The value is neither shown nor kept on the error: under a
 * wrong name it may well be a password.
 *
 * @param where names the options in the message, as in `'the acquire options'`.
 * @param aliases names a caller may reach for and what they stand for here. Default: none.
 * @param path the option these are the value of, as `'retry'`: an unknown key is then named
 *   `retry.backof` (in `.option`, the message and the suggestion), and a value that is no object
 *   `retry`. Default: none, top-level options, a value that is no object named `options`.
 */
export function refuseUnknown(
  options: unknown,
  known: readonly string[],
  where: string,
  aliases: Readonly<Record<string, OptionAlias>> = {},
  path?: string,
): asserts options is object {
  if (!isOptionsObject(options)) throw new InvalidOptionError(path ?? 'options', options, 'an object');
  const named = (name: string) => (path === undefined ? name : `${path}.${name}`);
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    const alias = Object.hasOwn(aliases, name) ? aliases[name] : closest(name, known);
    const { meant, note } = typeof alias === 'object' ? alias : { meant: alias, note: undefined };
    throw InvalidOptionError.unknown(
      named(name),
      `one of ${where}: ${known.join(', ')}${note === undefined ? '' : `; ${note}`}`,
      meant !== undefined && known.includes(meant) ? named(meant) : undefined,
    );
  }
}

/**
 * Whether `value` can be options: an object read by its names. A list, a Map, a Set or a Date is
 * not: read by its names, it would pass as none given, its entries unread.
 */
function isOptionsObject(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  // A plain object, the common case, skips reading the tag; a class instance passes on it.
  return (
    prototype === Object.prototype ||
    prototype === null ||
    Object.prototype.toString.call(value) === '[object Object]'
  );
}

/** The known name a typo most likely stands for: the nearest, at most 2 edits and under half its length away. */
function closest(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.min(2, Math.ceil(name.length / 2) - 1);
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance <= bestDistance) {
      best = candidate;
      bestDistance = distance - 1;
    }
  }
  return best;
}

/** Levenshtein distance, adjacent swaps counting as one edit ("wiat" for "wait"). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        distance = Math.min(distance, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = distance;
    }
  }
  return rows[a.length]![b.length]!;
}

/** A duration in ms (a command timeout, a backoff step): a positive integer below 2^31. */
export function checkMs(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > MAX_TTL) {
    throw new InvalidOptionError(name, value, `a positive integer number of ms below 2^31`);
  }
  return value;
}

/**
 * A lock's ttl in ms: from `MIN_TTL` to 2^31 - 1. A shorter lease ends before Redis's answer is
 * back, so every grant would be given back as expired and a free lock reported busy.
 */
export function checkTtl(value: unknown, name = 'ttl'): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < MIN_TTL || value > MAX_TTL) {
    throw new InvalidOptionError(name, value, `an integer number of ms from ${MIN_TTL} to ${MAX_TTL}`);
  }
  return value;
}

export function checkWait(value: unknown): number {
  if (value === Number.POSITIVE_INFINITY) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_TTL) {
    throw new InvalidOptionError('wait', value, 'a non-negative integer number of ms, or Infinity');
  }
  return value;
}

export function checkRetry(value: unknown, fallback: Required<RetryOptions>): Required<RetryOptions> {
  if (value === undefined) return fallback;
  if (typeof value !== 'object' || value === null) throw new InvalidOptionError('retry', value, 'an object');
  refuseUnknown(value, ['base', 'max', 'jitter', 'attempts'], 'the retry options', {}, 'retry');
  const retry = { ...fallback, ...definedOnly(value as RetryOptions) };
  checkMs(retry.base, 'retry.base');
  checkMs(retry.max, 'retry.max');
  if (retry.max < retry.base) {
    // Named as written: the other of the two may be one the caller never gave.
    if ((value as RetryOptions).max === undefined)
      throw new InvalidOptionError(
        'retry.base',
        retry.base,
        `at most retry.max (${retry.max} when not given)`,
      );
    throw new InvalidOptionError('retry.max', retry.max, `at least retry.base (${retry.base})`);
  }
  if (typeof retry.jitter !== 'number' || !(retry.jitter >= 0 && retry.jitter <= 1)) {
    throw new InvalidOptionError('retry.jitter', retry.jitter, 'a number from 0 to 1');
  }
  const { attempts } = retry;
  if (attempts !== Number.POSITIVE_INFINITY && !(Number.isSafeInteger(attempts) && attempts > 0)) {
    throw new InvalidOptionError('retry.attempts', attempts, 'a positive integer, or Infinity');
  }
  return retry;
}

export function checkKey(key: unknown): string {
  if (typeof key !== 'string') throw new InvalidKeyError(key, 'a lock key must be a string');
  if (key.length === 0) throw new InvalidKeyError(key, 'a lock key must not be empty');
  if (Buffer.byteLength(key) > MAX_KEY_BYTES)
    throw new InvalidKeyError(key, `longer than ${MAX_KEY_BYTES} bytes`);
  if (!isWellFormedValue(key)) {
    throw new InvalidKeyError(key, `${LONE_SURROGATE_REFUSAL}: the key of another name`);
  }
  return key;
}

export function checkOwner(owner: unknown, name = 'owner'): string {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 256) {
    throw new InvalidOptionError(name, owner, 'a non-empty string of at most 256 characters');
  }
  if (!isWellFormedValue(owner)) {
    throw new InvalidOptionError(
      name,
      owner,
      'well-formed Unicode (a lone UTF-16 surrogate reaches Redis as U+FFFD)',
    );
  }
  // The token format keeps its own fields beside the owners' (in the lock hash NUL + owner for
  // the last attempts applied and SOH for release ids; in the waiter registrations NUL + owner
  // for grant terms and STX + owner for an inbox): an owner starting so would overwrite them.
  if (owner.charCodeAt(0) <= 2) {
    throw new InvalidOptionError(
      name,
      owner,
      'a string not starting with NUL, SOH or STX (\\u0000, \\u0001, \\u0002)',
    );
  }
  return owner;
}

export function checkSignal(signal: unknown): AbortSignal | undefined {
  if (signal === undefined || signal instanceof AbortSignal) return signal;
  throw new InvalidOptionError('signal', signal, 'an AbortSignal');
}

/** Refuses a callback that is no function before anything runs: called, it would fail with a bare TypeError. */
export function checkFunction(
  value: unknown,
  name: string,
  expected: string,
): asserts value is (...args: never) => unknown {
  if (typeof value !== 'function') throw new InvalidOptionError(name, value, expected);
}

export function checkBoolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw new InvalidOptionError(name, value, 'a boolean');
}

/**
 * An option's value, or its default when it was left out. Only `undefined` leaves it out: a
 * `null` is checked as a value and refused, rather than read as "the default" (a config's
 * `failOpen: null` silently failing closed, `expire: null` locking for the default time).
 */
export function orDefault<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

/** `{ ttl: undefined }` means "not given", so it must not override a default (`null` is a value, and refused). */
export function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export const ACQUIRE_OPTIONS: readonly (keyof AcquireOptions)[] = [
  'ttl',
  'wait',
  'renew',
  'signal',
  'owner',
  'retry',
  'reentrant',
];

export const USING_OPTIONS: readonly (keyof UsingOptions)[] = [...ACQUIRE_OPTIONS, 'rejectOnLoss'];

export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || Buffer.byteLength(prefix) > 256 || !isWellFormedValue(prefix)) {
    throw new InvalidOptionError('prefix', prefix, 'a well-formed Unicode string of at most 256 bytes');
  }
  return prefix;
}

export function checkClock(clock: unknown): () => number {
  if (clock === undefined) return () => performance.now();
  if (typeof clock !== 'function')
    throw new InvalidOptionError('clock', clock, 'a function returning monotonic ms');
  return clock as () => number;
}
