import { createHash } from 'node:crypto';
import type { RedisClient } from './protocol.js';
import { isCluster } from './topology.js';

/**
 * The scripts each connection has run by EVAL, by socket: ioredis makes a new socket on every
 * reconnect, so the connection to a restarted or failed-over server starts with none (ioredis
 * keeps the same per socket for its own `defineCommand` scripts). A hint only: a script the
 * server lost while the connection stayed up (SCRIPT FLUSH) goes as EVALSHA once more, is
 * answered NOSCRIPT and is sent again whole.
 */
const answered = new WeakMap<object, Set<string>>();

/** What `redis`'s connection has answered, when a command sent now is written on it at once. */
function answeredOn(redis: RedisClient): Set<string> | undefined {
  // A client not ready queues the command for a connection not made yet; a cluster's commands go
  // to nodes of their slots, on sockets of their own.
  if (redis.status !== 'ready' || isCluster(redis)) return undefined;
  let scripts = answered.get(redis.stream);
  if (!scripts) {
    scripts = new Set();
    answered.set(redis.stream, scripts);
  }
  return scripts;
}

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
   * `followUp`, when given, is called right after each script command is issued (synchronously,
   * so it sends its own command behind the script's on the same connection, as in a pipeline):
   * the engine's WAIT must cover the script's write even across a reconnect. Followed up, the
   * script goes whole (EVAL) until its connection has answered it: a WAIT behind an EVALSHA
   * answered NOSCRIPT would hold the EVAL sent next behind it, for up to WAIT's timeout with a
   * replica lagging. `wanted`, when given, is asked before the script is sent again as EVAL:
   * answering false, it is not, and the run answers `UNSENT` (see `AttemptContext.wanted`).
   */
  async run(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
    followUp?: () => void,
    wanted?: () => boolean,
  ): Promise<unknown> {
    if (followUp && !answeredOn(redis)?.has(this.sha)) return this.sendWhole(redis, keys, args, followUp);
    try {
      const reply = redis.evalsha(this.sha, keys.length, ...keys, ...args);
      followUp?.();
      return await reply;
    } catch (error) {
      if (!isNoScript(error)) throw error;
      // The server lost its scripts (SCRIPT FLUSH): every one this connection ran is gone.
      answeredOn(redis)?.clear();
      if (wanted?.() === false) return UNSENT;
      return this.sendWhole(redis, keys, args, followUp);
    }
  }

  /** Sends the script as EVAL: once answered, its connection has it. */
  private async sendWhole(
    redis: RedisClient,
    keys: readonly string[],
    args: readonly (string | number)[],
    followUp: (() => void) | undefined,
  ): Promise<unknown> {
    const reply = redis.eval(this.source, keys.length, ...keys, ...args);
    followUp?.();
    const answer = await reply;
    // Noted for the client's connection now, the one that answered: ioredis sends again on its
    // next connection what a closed one left unanswered.
    answeredOn(redis)?.add(this.sha);
    return answer;
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
