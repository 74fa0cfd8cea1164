import {
  type AcquireReply,
  type AttemptContext,
  expiryGuardLua,
  LuaScript,
  type RedisClient,
  UNSENT,
} from '@lock/core';
import attemptLua from './attempt.lua';
import { attemptLatches } from './names.js';
import { acquireReply } from './replies.js';

/**
 * An acquire script of a Redisson lock kind, prefixed with attempt.lua so that a copy of an
 * attempt already applied counts no second hold. Every kind's acquisition goes through `run`,
 * which passes the latch list of the hash field the attempt counts in last in KEYS and the
 * attempt id last in ARGV (neither without an attempt id: then every copy counts), and reads the
 * `{1, holds, fence, ttl}` / `{0, pttl}` reply. A script the server lost (NOSCRIPT) is sent
 * again whole only while `context.wanted` says the call still waits: sent after the call's
 * give-up, it would queue a fair-lock waiter again, a ghost ahead of every later one.
 */
export class AcquireScript {
  private readonly script: LuaScript;

  constructor(lua: string) {
    this.script = new LuaScript(expiryGuardLua + attemptLua + lua);
  }

  async run(
    redis: RedisClient,
    resource: string,
    field: string,
    keys: readonly string[],
    args: readonly (string | number)[],
    lease: number,
    context: AttemptContext | undefined,
  ): Promise<AcquireReply> {
    const attempt = context?.attempt;
    const [sentKeys, sentArgs] = attempt
      ? [
          [...keys, attemptLatches(resource, field)],
          [...args, attempt],
        ]
      : [keys, args];
    const reply = await this.script.run(redis, sentKeys, sentArgs, context?.wanted);
    // Given up on before it could be sent again: it ran nowhere, a refusal with no TTL known.
    if (reply === UNSENT) return { acquired: false, remaining: -1 };
    return acquireReply(reply, lease);
  }
}
