import type { RedisClient } from '@lock/core';

/**
 * A script sent whole as EVAL, never EVALSHA (`LuaScript`): for a script run rarely and when time
 * is short (an undo of a grant whose reply came too late, a waiter giving up its turn), often the
 * first on its server or since a restart, failover or SCRIPT FLUSH, where a NOSCRIPT answer would
 * cost a second round trip. Rare enough that sending its source each time costs nothing that
 * matters.
 */
export class WholeScript {
  constructor(readonly source: string) {}

  run(redis: RedisClient, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    return redis.eval(this.source, keys.length, ...keys, ...args);
  }
}
