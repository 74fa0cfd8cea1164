import { type LuaScript, type RedisClient, type ReleaseReply, WholeScript } from '@lock/core';
import { latchTimeout, requestId } from './ids.js';
import { unlockLatch } from './names.js';
import undoLua from './undo.lua';

/** A script run with keys and arguments: a `LuaScript`, or a `WholeScript` (an undo, `undoScriptOf`). */
export type UnlockScript = Pick<LuaScript, 'run'>;

/** What an unlock script answers, writing nothing, when it needs the keys `more` adds. */
const NEEDS_MORE = -1;

/**
 * Runs one of the unlock scripts the way Redisson calls them: the latch key of the request id
 * goes last in KEYS and its lifetime last in ARGV.
 *
 * An unlock named by the engine (`id`: one per handle, the same on every retry of its release)
 * leaves its latch to expire by itself, where Redisson deletes it once the call completed: the
 * engine may have given up on this call before its answer came, and then retries with the same
 * id, which must find the latch and be answered from it rather than take off a second hold. An
 * unlock without an id (never retried) deletes its latch as Redisson does, without waiting.
 *
 * A script that needs keys it is not always given (the RLock unlock meeting a fair lock's kept
 * turn) answers `NEEDS_MORE` having written nothing; it then runs again with `more()`'s keys
 * and arguments added after the others. `last` goes after those, just before the latch lifetime
 * (an undo's attempt id), so that it keeps its place from the end either way.
 */
export async function unlockWithLatch(
  redis: RedisClient,
  script: UnlockScript,
  name: string,
  keys: readonly string[],
  args: readonly (string | number)[],
  id?: string,
  more?: () => { keys: readonly string[]; args: readonly (string | number)[] },
  last: readonly (string | number)[] = [],
): Promise<ReleaseReply> {
  const latch = unlockLatch(name, id ?? requestId());
  let reply = await script.run(redis, [...keys, latch], [...args, ...last, latchTimeout()]);
  if (reply === NEEDS_MORE && more) {
    const extra = more();
    reply = await script.run(
      redis,
      [...keys, ...extra.keys, latch],
      [...args, ...extra.args, ...last, latchTimeout()],
    );
  }
  if (id === undefined) redis.del(latch).catch(() => {});
  if (reply === 1) return 'released';
  return reply === 0 ? 'held' : 'not-owner';
}

/**
 * The undo script of a hash lock kind (undo.lua): its unlock script `release`, after `prefix`
 * (what that script is prefixed with), wrapped as the function `unlock`, then `tail`, which names
 * where `release` keeps the attempt list and field; sent whole, as an undo runs rarely and late
 * (`WholeScript`). `prefix` must include attempt.lua.
 */
export function undoScriptOf(prefix: string, release: string, tail: string): UnlockScript {
  return new WholeScript(`${prefix}local function unlock()\n${release}\nend\n${undoLua}${tail}`);
}
