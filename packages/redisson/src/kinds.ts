import type { LockProtocol, RedisClient, ReleaseReply } from '@lock/core';

/** What the Redisson API needs of each lock kind's protocol beyond the engine's `LockProtocol`. */
export interface RedissonProtocol extends LockProtocol {
  /** The hash field `owner`'s holds are counted in. */
  field(owner: string): string;
  /**
   * One unlock as Java's, re-applying `lease` while holds remain. `requestId` names the unlock, the
   * same on every retry of it (Redisson's latch answers a retry). Default: a new one.
   */
  unlock(
    redis: RedisClient,
    resource: string,
    owner: string,
    lease: number,
    requestId?: string,
  ): Promise<ReleaseReply>;
  /** Frees the lock whoever holds it; true when there was one to free. */
  forceUnlock(redis: RedisClient, resource: string): Promise<boolean>;
}

/** The Redisson lock kinds this package speaks. */
export type LockKind = 'lock' | 'fenced' | 'fair' | 'read' | 'write';
