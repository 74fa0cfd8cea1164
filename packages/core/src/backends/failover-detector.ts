import type { RedisClient } from '../protocol.js';

let warned = false;

/**
 * Warns once per process of a Sentinel-managed ioredis client without `failoverDetector: true`.
 * Such a client stays on the old master after a failover until its connection breaks, and
 * Sentinel only demotes a reachable old master some seconds later (about 10 s measured): locks
 * are renewed and granted there meanwhile while the promoted replica lets them expire, so
 * another owner takes them there.
 */
export function warnWithoutFailoverDetector(redis: RedisClient): void {
  if (warned) return;
  const options = (redis as { options?: { sentinels?: unknown[] | null; failoverDetector?: unknown } })
    .options;
  if (!options?.sentinels?.length || options.failoverDetector) return;
  warned = true;
  process.emitWarning(
    'a Sentinel-managed client without failoverDetector: true stays on the old master after a failover until Sentinel demotes it (about 10 s): locks renewed or granted there meanwhile expire on the new master, where another owner takes them; create the ioredis client with failoverDetector: true',
    { code: 'ERR_LOCK_FAILOVER_DETECTOR', type: 'LockWarning' },
  );
}
