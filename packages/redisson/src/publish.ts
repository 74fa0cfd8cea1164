import { pubSubMode, type RedisClient } from '@lock/core';

/** The command an unlock script publishes with: lower case, as Redisson passes it. */
export type PublishCommand = 'publish' | 'spublish';

/**
 * Redisson's AUTO mode, core's `pubSubMode`: sharded pub/sub only on a cluster whose servers
 * answer `PUBSUB SHARDNUMSUB` (Redis 7+, Valkey); plain pub/sub on every other topology. The
 * release listener subscribes the same way.
 */
export async function publishCommand(redis: RedisClient): Promise<PublishCommand> {
  return (await pubSubMode(redis)) === 'sharded' ? 'spublish' : 'publish';
}
