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

  async run(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
