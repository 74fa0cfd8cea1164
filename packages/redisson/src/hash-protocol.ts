import {
  type AcquireReply,
  type AttemptContext,
  type Inspection,
  LuaScript,
  type RedisClient,
  type ReleaseReply,
  type RenewalItem,
} from '@lock/core';
import attemptLua from './attempt.lua';
import type { RedissonProtocol } from './kinds.js';
import renewLua from './lock/renew.lua';
import { attemptLatches, validateName } from './names.js';
import { publishCommand } from './publish.js';
import { type UnlockScript, unlockWithLatch } from './unlock.js';

const renewScript = new LuaScript(attemptLua + renewLua);

/** Redisson's default `lockWatchdogTimeout`: the lease of a lock taken without one. */
export const WATCHDOG_TIMEOUT = 30_000;

/**
 * The token of a Redisson hold is its lease in ms: Java re-applies the lease of the last
 * acquisition (`internalLockLeaseTime`) when a re-entrant unlock leaves holds behind, so the
 * engine hands it back to `release` with the hold (the scripts never let it shorten the TTL).
 */
export const leaseOf = (token: string): number => Number(token) || WATCHDOG_TIMEOUT;

/** What one unlock of a kind sends to its release script, and to the undo wrapping it (undo.lua). */
export interface UnlockCall {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  /** What the script asks for when it answers that it needs more (see `unlockWithLatch`). */
  readonly more?: () => { keys: readonly string[]; args: readonly (string | number)[] };
}

/**
 * What every Redisson lock kind shares: a hash at the bare (mapped) name, whose owners'
 * fields count their holds; names validated by Redisson's hash-tag rules; releases that carry
 * the hold's lease; renewal of one field per lock by the watchdog script unless a kind needs
 * more (the read lock's timeout keys).
 */
export abstract class HashLockProtocol implements RedissonProtocol {
  abstract readonly name: string;

  validate(resource: string, cluster: boolean): void {
    validateName(resource, cluster);
  }

  lockKey(resource: string): string {
    return resource;
  }

  /** The hash field `owner`'s holds are counted in. */
  field(owner: string): string {
    return owner;
  }

  release(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    _handedOn?: unknown,
    id?: string,
    attempt?: string,
  ): Promise<ReleaseReply> {
    return this.unlock(redis, resource, owner, leaseOf(token), id, attempt);
  }

  async extend(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    ttl: number,
  ): Promise<string | null> {
    const [answer] = await this.extendMany(redis, [{ resource, owner, token }], ttl);
    return answer ?? null;
  }

  /** One watchdog call for all `items` (the backend hands over one slot's locks at a time on a cluster). */
  async extendMany(
    redis: RedisClient,
    items: readonly RenewalItem[],
    ttl: number,
  ): Promise<(string | null)[]> {
    const fields = items.map((item) => this.field(item.owner));
    const keys = [
      ...items.map((item) => item.resource),
      ...items.map((item, i) => attemptLatches(item.resource, fields[i] as string)),
    ];
    const holds = (await renewScript.run(redis, keys, [ttl, ...fields])) as number[];
    return holds.map((count, i) => (count > 0 ? (items[i]?.token ?? null) : null));
  }

  abstract channel(resource: string, waiter: string): string;
  abstract acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
    context?: AttemptContext,
  ): Promise<AcquireReply>;
  /** The kind's unlock script, and its undo: the same script wrapped by undo.lua (`undoScriptOf`). */
  protected abstract readonly unlockScripts: { readonly release: UnlockScript; readonly undo: UnlockScript };
  /** The keys and arguments of one unlock of `owner`; `lease` is what a partial unlock re-applies. */
  protected abstract unlockCall(resource: string, owner: string, lease: number, publish: string): UnlockCall;

  /**
   * One unlock as Java's: `lease` is what a partial unlock re-applies (the hold's last lease);
   * `attempt`, the attempt that took the hold given back, leaves the field's attempt latches with
   * it (see attempt.lua).
   */
  unlock(
    redis: RedisClient,
    resource: string,
    owner: string,
    lease: number,
    requestId?: string,
    attempt = '',
  ): Promise<ReleaseReply> {
    return this.sendUnlock(redis, this.unlockScripts.release, resource, owner, lease, requestId, [attempt]);
  }

  /**
   * Gives back the hold acquire attempt `attempt` counted, once however often it is sent, and
   * only if it counted one in the lock's current life (see undo.lua): the engine undoes a grant
   * whose reply came too late for a thread that may hold the lock besides, and by then that
   * grant's lease may have ended and the thread taken the lock again. Taken off as `unlock` does;
   * `'held'` and nothing written when the attempt counted no hold the thread still has.
   */
  undo(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    attempt: string,
    _context?: AttemptContext,
  ): Promise<ReleaseReply> {
    // No token: the engine undoes an attempt whose reply never came, its grant's lease unknown.
    // The holds left then keep their TTL (the scripts never shorten it) rather than take the
    // watchdog's 30 s, which a lock taken with a short lease would keep if its thread died.
    const lease = token === '' ? 0 : leaseOf(token);
    return this.sendUnlock(redis, this.unlockScripts.undo, resource, owner, lease, attempt, [attempt]);
  }

  private async sendUnlock(
    redis: RedisClient,
    script: UnlockScript,
    resource: string,
    owner: string,
    lease: number,
    id?: string,
    last?: readonly string[],
  ): Promise<ReleaseReply> {
    const call = this.unlockCall(resource, owner, lease, await publishCommand(redis));
    return unlockWithLatch(redis, script, resource, call.keys, call.args, id, call.more, last);
  }
  abstract forceUnlock(redis: RedisClient, resource: string): Promise<boolean>;
  abstract inspect(redis: RedisClient, resource: string): Promise<Inspection>;
  abstract isReleaseMessage(message: string): boolean;
}
