import type { LockProtocol, RedisClient, ReleaseReply, RenewalItem } from '../protocol.js';

/** The release scripts' shared answer: -1 not the owner, 0 freed, n > 0 holds left. */
export function releaseReply(left: number): ReleaseReply {
  if (left < 0) return 'not-owner';
  return left === 0 ? 'released' : 'held';
}

type ExtendMany = (
  redis: RedisClient,
  items: readonly RenewalItem[],
  ttl: number,
) => Promise<(string | null)[]>;

/** A protocol's single-lock `extend`, made from its batch renewal (one script serves both). */
export function extendOne(extendMany: ExtendMany): LockProtocol['extend'] {
  return async (redis, resource, owner, token, ttl) => {
    const [renewed] = await extendMany(redis, [{ resource, owner, token }], ttl);
    return renewed ?? null;
  };
}
