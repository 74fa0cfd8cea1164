import type { Inspection, RedisClient } from '@lock/core';

/** Reads a Redisson lock hash: its holders (every field but a read-write lock's `mode`) and TTL. */
export async function inspectHash(
  redis: RedisClient,
  name: string,
  fence: number | null = null,
): Promise<Inspection> {
  const [fields, ttl] = await Promise.all([redis.hgetall(name), redis.pttl(name)]);
  const holders = Object.entries(fields).filter(([field]) => field !== 'mode');
  const first = holders[0];
  if (!first) return { held: false, ttl: null, owner: null, fence, holds: 0 };
  return { held: true, ttl, owner: first[0], fence, holds: Number(first[1]) };
}
