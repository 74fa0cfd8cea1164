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

const renewScript = new LuaScript(attemptLua + renewLua);

/** Redisson's default `lockWatchdogTimeout`: the lease of a lock taken without one. */
export const WATCHDOG_TIMEOUT = 30_000;

/**
 * The token of a Redisson hold is its lease in ms: Java re-applies the lease of the last
 * acquisition (`internalLockLeaseTime`) when a re-entrant unlock leaves holds behind, so the
 * engine hands it back to `release` with the hold (the scripts never let it shorten the TTL).
 */
export const leaseOf = (token: string): number => Number(token) || WATCHDOG_TIMEOUT;

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
  ): Promise<ReleaseReply> {
    return this.unlock(redis, resource, owner, leaseOf(token), id);
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
  abstract unlock(
    redis: RedisClient,
    resource: string,
    owner: string,
    lease: number,
    requestId?: string,
  ): Promise<ReleaseReply>;
  /**
   * Gives back the hold acquire attempt `attempt` counted, as `unlock` does, once however often
   * it is sent, and only if it counted one in the lock's current life (see undo.lua).
   */
  abstract undo(
    redis: RedisClient,
    resource: string,
    owner: string,
    token: string,
    attempt: string,
    context?: AttemptContext,
  ): Promise<ReleaseReply>;
  abstract forceUnlock(redis: RedisClient, resource: string): Promise<boolean>;
  abstract inspect(redis: RedisClient, resource: string): Promise<Inspection>;
  abstract isReleaseMessage(message: string): boolean;
}
