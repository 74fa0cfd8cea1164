import {
  type AcquireReply,
  type AttemptContext,
  type Inspection,
  LuaScript,
  type RedisClient,
} from '@lock/core';
import { AcquireScript } from '../attempt.js';
import attemptLua from '../attempt.lua';
import deadWaitersLua from '../fair/dead-waiters.lua';
import turnLua from '../fair/turn.lua';
import { HashLockProtocol, type UnlockCall } from '../hash-protocol.js';
import {
  attemptLatches,
  attemptLatchPrefix,
  fairQueue,
  fairTimeouts,
  fenceCounter,
  lockChannel,
} from '../names.js';
import { publishCommand } from '../publish.js';
import { undoScriptOf } from '../unlock.js';
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

  protected readonly unlockScripts = { release: releaseScript, undo: undoScript };

  /**
   * release.lua's keys and arguments. The fair queue's keys go only to the rare unlock that
   * leaves the thread a fair lock's kept turn (see release.lua), with this process's clock,
   * which the fair waiters' deadlines use.
   */
  protected unlockCall(resource: string, owner: string, lease: number, publish: string): UnlockCall {
    return {
      keys: [resource, lockChannel(resource), attemptLatches(resource, owner)],
      args: [UNLOCK_MESSAGE, lease, owner, publish],
      more: () => ({ keys: [fairQueue(resource), fairTimeouts(resource)], args: [Date.now()] }),
    };
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
