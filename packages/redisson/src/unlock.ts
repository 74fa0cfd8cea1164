import type { LuaScript, RedisClient, ReleaseReply } from '@lock/core';
import { latchTimeout, requestId } from './ids.js';
import { unlockLatch } from './names.js';

/**
 * Runs one of the unlock scripts the way Redisson calls them: the latch key of a fresh request
 * id goes last in KEYS and its lifetime last in ARGV. Once the script has answered, the latch is
 * deleted without waiting, as Redisson does: it only exists so that a retried call can read the
 * first call's outcome, and it expires by itself, so a failed DEL must not fail a done unlock.
 */
export async function unlockWithLatch(
  redis: RedisClient,
  script: LuaScript,
  name: string,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<ReleaseReply> {
  const latch = unlockLatch(name, requestId());
  const reply = await script.run(redis, [...keys, latch], [...args, latchTimeout()]);
  redis.del(latch).catch(() => {});
  if (reply === 1) return 'released';
  return reply === 0 ? 'held' : 'not-owner';
}
