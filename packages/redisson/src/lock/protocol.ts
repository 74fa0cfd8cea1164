import {
  type AcquireReply,
  type Inspection,
  LuaScript,
  type RedisClient,
  type ReleaseReply,
} from '@lock/core';
import { FirstFences } from '../fences.js';
import { HashLockProtocol } from '../hash-protocol.js';
import { inspectHash } from '../inspect.js';
import { lockChannel } from '../names.js';
import { publishCommand } from '../publish.js';
import { acquireReply } from '../replies.js';
import { unlockWithLatch } from '../unlock.js';
import acquireLua from './acquire.lua';
import forceReleaseLua from './force-release.lua';
import releaseLua from './release.lua';

const acquireScript = new LuaScript(acquireLua);
const releaseScript = new LuaScript(releaseLua);
const forceReleaseScript = new LuaScript(forceReleaseLua);

/** What RLock's unlock publishes: Redisson's `UNLOCK_MESSAGE`, which wakes one waiter per JVM. */
export const UNLOCK_MESSAGE = '0';

/**
 * Redisson's RLock (RedissonLock): a hash at the bare name holding `<uuid>:<thread>` → count,
 * released with `0` on `redisson_lock__channel:{name}`. Owners handed to this protocol are
 * Redisson owner strings; tokens carry the lease (`leaseOf`).
 */
export class RLockProtocol extends HashLockProtocol {
  readonly name: string = 'redisson';
  protected readonly fences = new FirstFences();

  channel(resource: string, _waiter: string): string {
    return lockChannel(resource);
  }

  async acquire(redis: RedisClient, resource: string, owner: string, ttl: number): Promise<AcquireReply> {
    const reply = acquireReply(await acquireScript.run(redis, [resource], [ttl, owner]), ttl);
    return this.fences.settle(resource, owner, reply);
  }

  /** One unlock as Java's: `lease` is what a partial unlock re-applies (the hold's last lease). */
  async unlock(redis: RedisClient, resource: string, owner: string, lease: number): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    const reply = await unlockWithLatch(
      redis,
      releaseScript,
      resource,
      [resource, lockChannel(resource)],
      [UNLOCK_MESSAGE, lease, owner, publish],
    );
    if (reply !== 'held') this.fences.forget(resource, owner);
    return reply;
  }

  /** Deletes the lock whoever holds it; true when there was one. */
  async forceUnlock(redis: RedisClient, resource: string): Promise<boolean> {
    const publish = await publishCommand(redis);
    const reply = await forceReleaseScript.run(
      redis,
      [resource, lockChannel(resource)],
      [UNLOCK_MESSAGE, publish],
    );
    return reply === 1;
  }

  /** The fence is known only to the client holding the lock (the layout stores none); null elsewhere. */
  async inspect(redis: RedisClient, resource: string): Promise<Inspection> {
    const seen = await inspectHash(redis, resource);
    return seen.owner === null ? seen : { ...seen, fence: this.fences.of(resource, seen.owner) };
  }

  isReleaseMessage(message: string): boolean {
    return message === UNLOCK_MESSAGE;
  }
}
