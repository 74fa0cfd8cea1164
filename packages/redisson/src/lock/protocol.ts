import {
  type AcquireReply,
  type AttemptContext,
  type Inspection,
  LuaScript,
  type RedisClient,
  type ReleaseReply,
} from '@lock/core';
import { AcquireScript } from '../attempt.js';
import attemptLua from '../attempt.lua';
import deadWaitersLua from '../fair/dead-waiters.lua';
import turnLua from '../fair/turn.lua';
import { HashLockProtocol, leaseOf } from '../hash-protocol.js';
import {
  attemptLatches,
  attemptLatchPrefix,
  fairQueue,
  fairTimeouts,
  fenceCounter,
  lockChannel,
} from '../names.js';
import { publishCommand } from '../publish.js';
import { type UnlockScript, undoScriptOf, unlockWithLatch } from '../unlock.js';
import acquireLua from './acquire.lua';
import forceReleaseLua from './force-release.lua';
import inspectLua from './inspect.lua';
import releaseLua from './release.lua';
import undoLua from './undo.lua';

const rlockAcquire = new AcquireScript(acquireLua);
const releasePrefix = attemptLua + deadWaitersLua + turnLua;
const releaseScript = new LuaScript(releasePrefix + releaseLua);
const undoScript = undoScriptOf(releasePrefix, releaseLua, undoLua);
const forceReleaseScript = new LuaScript(attemptLua + forceReleaseLua);
const inspectScript = new LuaScript(inspectLua);

/** What RLock's unlock publishes: Redisson's `UNLOCK_MESSAGE`, which wakes one waiter per JVM. */
export const UNLOCK_MESSAGE = '0';

/**
 * Redisson's RLock (RedissonLock): a hash at the bare name holding `<uuid>:<thread>` → count,
 * released with `0` on `redisson_lock__channel:{name}`. Owners handed to this protocol are
 * Redisson owner strings; tokens carry the lease (`leaseOf`). Fences come from
 * `redisson_lock_token:{name}`, the counter of Redisson's RFencedLock, which a Node first
 * acquisition bumps and a Java RLock never does.
 */
export class RLockProtocol extends HashLockProtocol {
  readonly name: string = 'redisson';
  /**
   * One attempt: KEYS [hash, fence counter], ARGV [lease, owner], to which `AcquireScript` adds
   * the owner's attempt latches; the fenced lock draws a token on re-entry too.
   */
  protected readonly acquireScript: AcquireScript = rlockAcquire;

  channel(resource: string, _waiter: string): string {
    return lockChannel(resource);
  }

  acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
    context?: AttemptContext,
  ): Promise<AcquireReply> {
    return this.acquireScript.run(
      redis,
      resource,
      owner,
      [resource, fenceCounter(resource)],
      [ttl, owner],
      ttl,
      context,
    );
  }

  /**
   * One unlock as Java's: `lease` is what a partial unlock re-applies (the hold's last lease).
   * The fair queue's keys go only to the rare unlock that leaves the thread a fair lock's kept
   * turn (see release.lua), with this process's clock, which the fair waiters' deadlines use.
   */
  unlock(
    redis: RedisClient,
    resource: string,
    owner: string,
    lease: number,
    requestId?: string,
  ): Promise<ReleaseReply> {
    return this.sendUnlock(redis, releaseScript, resource, owner, lease, requestId);
  }

  /** Runs `script`, release.lua or the undo wrapping it, with release.lua's keys and arguments. */
  private async sendUnlock(
    redis: RedisClient,
    script: UnlockScript,
    resource: string,
    owner: string,
    lease: number,
    id?: string,
    last?: readonly string[],
  ): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    return unlockWithLatch(
      redis,
      script,
      resource,
      [resource, lockChannel(resource), attemptLatches(resource, owner)],
      [UNLOCK_MESSAGE, lease, owner, publish],
      id,
      () => ({ keys: [fairQueue(resource), fairTimeouts(resource)], args: [Date.now()] }),
      last,
    );
  }

  /**
   * Gives back the hold acquire attempt `attempt` counted, once however often it is sent, and
   * only if it counted one in the lock's current life (see undo.lua): the engine undoes a grant
   * whose reply came too late for a thread that may hold the lock besides, and by then that
   * grant's lease may have ended and the thread taken the lock again. Taken off as `unlock`
   * does (`token`'s lease re-applied while holds remain, the last one waking waiters); `'held'`
   * and nothing written when the attempt counted no hold the thread still has.
   */
  undo(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    attempt: string,
  ): Promise<ReleaseReply> {
    return this.sendUnlock(redis, undoScript, resource, owner, leaseOf(token), attempt, [attempt]);
  }

  /** Deletes the lock whoever holds it; true when there was one. */
  async forceUnlock(redis: RedisClient, resource: string): Promise<boolean> {
    const publish = await publishCommand(redis);
    const reply = await forceReleaseScript.run(
      redis,
      [resource, lockChannel(resource), attemptLatchPrefix(resource)],
      [UNLOCK_MESSAGE, publish],
    );
    return reply === 1;
  }

  /** The holder (the hash's first field), its count, the TTL and the last fence drawn on this name. */
  async inspect(redis: RedisClient, resource: string): Promise<Inspection> {
    const [fence, ttl, holds, owner] = (await inspectScript.run(
      redis,
      [resource, fenceCounter(resource)],
      [],
    )) as [number, number?, number?, string?];
    const last = fence < 0 ? null : fence;
    if (owner === undefined) return { held: false, ttl: null, owner: null, fence: last, holds: 0 };
    return { held: true, ttl: ttl ?? null, owner, fence: last, holds: holds ?? 0 };
  }

  isReleaseMessage(message: string): boolean {
    return message === UNLOCK_MESSAGE;
  }
}
