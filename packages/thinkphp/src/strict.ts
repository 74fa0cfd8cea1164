import { InvalidKeyError, LuaScript, type RedisClient } from '@lock/core';
import acquireLua from './strict-acquire.lua';
import releaseLua from './strict-release.lua';

const acquireScript = new LuaScript(acquireLua);
const releaseScript = new LuaScript(releaseLua);

/**
 * What the seed's acquire script answers: 0 acquired, 1 vanished, 2 held (with the holder's ms
 * left), 3 lost a race.
 */
export type StrictAttempt = { readonly code: 0 | 1 | 3 } | { readonly code: 2; readonly remaining: number };

/** One run of the seed's acquire script, with the caller's `time()` as the PHP class passes it. */
export async function strictAcquire(
  redis: RedisClient,
  key: string,
  expire: number,
  now: number,
): Promise<StrictAttempt> {
  const reply = (await wrongTypeAsKeyError(
    key,
    acquireScript.run(redis, [key], [now + expire + 1, expire, now]),
  )) as 0 | 1 | 3 | [2, number];
  return Array.isArray(reply) ? { code: 2, remaining: reply[1] } : { code: reply };
}

/** One run of the seed's release script: deletes the key if its value is <= `now`, whoever wrote it. */
export async function strictRelease(redis: RedisClient, key: string, now: number): Promise<void> {
  await wrongTypeAsKeyError(key, releaseScript.run(redis, [key], [now]));
}

/** The seed's scripts abort with WRONGTYPE on a key of another type (B9); say what that means. */
async function wrongTypeAsKeyError<T>(key: string, pending: Promise<T>): Promise<T> {
  try {
    return await pending;
  } catch (error) {
    if (error instanceof Error && error.message.includes('WRONGTYPE')) {
      throw new InvalidKeyError(
        key,
        'the key holds another Redis type (a lock of another format?), not a timestamp string',
      );
    }
    throw error;
  }
}
