import { createHash } from 'node:crypto';
import type { RedisClient } from './protocol.js';

/**
 * A Lua script sent as EVALSHA, falling back to EVAL when the server does not know it yet
 * (first use, restart, SCRIPT FLUSH, failover). The user's client is never modified.
 */
export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * `wanted`, when given, is asked before the script is sent again as EVAL: answering false, it
   * is not, and the run answers `UNSENT` (see `AttemptContext.wanted`).
   */
  async run(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
    wanted?: () => boolean,
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      if (wanted?.() === false) return UNSENT;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/** What `LuaScript.run` answers for a script it did not send again, no longer wanted. */
export const UNSENT: unique symbol = Symbol('unsent');

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * A script sent whole as EVAL, never EVALSHA: for one run rarely and when time is short (a
 * waiter giving up its turn, an undo), often the first on its server or since a restart,
 * failover or SCRIPT FLUSH, where `LuaScript`'s NOSCRIPT answer would cost a second round trip.
 * Rare enough that sending its source each time costs nothing that matters.
 */
export class WholeScript {
  constructor(readonly source: string) {}

  run(redis: RedisClient, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return redis.eval(this.source, keys.length, ...keys, ...args);
  }
}
