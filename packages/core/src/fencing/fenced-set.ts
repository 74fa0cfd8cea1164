import { InvalidOptionError } from '../errors.js';
import type { RedisClient } from '../protocol.js';
import { LuaScript } from '../script.js';
import fencedSetLua from './fenced-set.lua';

const fencedSetScript = new LuaScript(fencedSetLua);

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
    throw new InvalidOptionError('fence', fence, 'a non-negative integer');
  return (await fencedSetScript.run(redis, [key], [fence, value])) === 1;
}

/** Reads what `fencedSet` stored: the value and the fence that wrote it, or null. */
export async function fencedGet(
  redis: RedisClient,
  key: string,
): Promise<{ value: string; fence: number } | null> {
  const [fence, value] = (await redis.hmget(key, 'fence', 'value')) as [string | null, string | null];
  return fence === null || value === null ? null : { value, fence: Number(fence) };
}
