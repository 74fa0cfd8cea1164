import type { RedisClient } from '@lock/core';

/** The command an unlock script publishes with: lower case, as Redisson passes it. */
export type PublishCommand = 'publish' | 'spublish';

const probed = new WeakMap<RedisClient, Promise<PublishCommand>>();

/**
 * Redisson's AUTO mode: sharded pub/sub only on a cluster whose servers answer
 * `PUBSUB SHARDNUMSUB` (Redis 7+, Valkey); plain pub/sub on every other topology.
 */
export function publishCommand(redis: RedisClient): Promise<PublishCommand> {
  if (!redis.isCluster) return Promise.resolve('publish');
  const known = probed.get(redis);
  if (known) return known;
  const answer = redis.call('PUBSUB', 'SHARDNUMSUB', '0').then(
    (): PublishCommand => 'spublish',
    (error: unknown): PublishCommand => {
      if (error instanceof Error && /unknown (sub)?command/i.test(error.message)) return 'publish';
      probed.delete(redis);
      throw error;
    },
  );
  probed.set(redis, answer);
  return answer;
}
