import { InvalidOptionError } from '../errors.js';
import type { RedisClient } from '../protocol.js';
import { LuaScript } from '../script.js';
import { isWellFormedValue, LONE_SURROGATE_REFUSAL } from '../well-formed.js';
import fencedSetLua from './fenced-set.lua';

const fencedSetScript = new LuaScript(fencedSetLua);

/*
 * Key and value are refused before anything is sent when ioredis would send something else: a
 * non-string (`undefined` as `''`, an array as several arguments, an object as `[object Object]`),
 * or a lone UTF-16 surrogate (sent as U+FFFD: two keys would be one resource, a value would change).
 */
function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key.length === 0)
    throw new InvalidOptionError('key', key, 'a non-empty string');
  if (!isWellFormedValue(key))
    throw new InvalidOptionError('key', key, 'a string', `invalid key: ${LONE_SURROGATE_REFUSAL}`);
}

/** The value is data: the error names its type, never its content. */
function checkValue(value: unknown): void {
  if (typeof value !== 'string') {
    const type = value === null ? 'null' : typeof value;
    throw new InvalidOptionError(
      'value',
      undefined,
      'a string',
      `invalid value: ${type} (expected a string)`,
    );
  }
  if (!isWellFormedValue(value))
    throw new InvalidOptionError('value', undefined, 'a string', `invalid value: ${LONE_SURROGATE_REFUSAL}`);
}

/**
 * Stores `value` at `key` unless a holder with a newer fence already wrote there, atomically.
 * This is what makes a lock safe against a holder paused past its lease: its late write
 * carries an older fence than the next holder's and is refused. Returns whether it was written.
 */
export async function fencedSet(
  redis: RedisClient,
  key: string,
  fence: number,
  value: string,
): Promise<boolean> {
  if (!Number.isSafeInteger(fence) || fence < 0)
    throw new InvalidOptionError('fence', fence, 'a non-negative integer up to 2^53 - 1');
  checkKey(key);
  checkValue(value);
  return (await fencedSetScript.run(redis, [key], [fence, value])) === 1;
}

/** Reads what `fencedSet` stored: the value and the fence that wrote it, or null. */
export async function fencedGet(
  redis: RedisClient,
  key: string,
): Promise<{ value: string; fence: number } | null> {
  checkKey(key);
  const [fence, value] = (await redis.hmget(key, 'fence', 'value')) as [string | null, string | null];
  return fence === null || value === null ? null : { value, fence: Number(fence) };
}
