import { type AcquireReply, type Inspection, LuaScript, type RedisClient } from '@lock/core';
import { inspectHash } from '../inspect.js';
import { RLockProtocol } from '../lock/protocol.js';
import { fenceCounter } from '../names.js';
import { acquireReply } from '../replies.js';
import acquireLua from './acquire.lua';

const acquireScript = new LuaScript(acquireLua);

/**
 * Redisson's RFencedLock: an RLock (same hash, channel, unlock and watchdog) plus the
 * `redisson_lock_token:{name}` counter that hands each acquisition its fencing token.
 */
export class FencedLockProtocol extends RLockProtocol {
  override readonly name = 'redisson-fenced';

  override async acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
  ): Promise<AcquireReply> {
    return acquireReply(
      await acquireScript.run(redis, [resource, fenceCounter(resource)], [ttl, owner]),
      ttl,
    );
  }

  override async inspect(redis: RedisClient, resource: string): Promise<Inspection> {
    const fence = await redis.get(fenceCounter(resource));
    return inspectHash(redis, resource, fence === null ? null : Number(fence));
  }
}
