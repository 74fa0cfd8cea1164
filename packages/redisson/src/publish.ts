import { pubSubMode, type RedisClient } from '@lock/core';

/** The command an unlock script publishes with: lower case, as Redisson passes it. */
export type PublishCommand = 'publish' | 'spublish';

/**
 * Core's `pubSubMode`: the mode the `pubSub` option forced on a cluster client, else Redisson's
 * AUTO mode (sharded pub/sub only on a cluster whose servers answer `PUBSUB SHARDNUMSUB`, Redis 7+
 * and Valkey); plain pub/sub on every other topology. The release listener subscribes the same way.
 */
export async function publishCommand(redis: RedisClient): Promise<PublishCommand> {
  return (await pubSubMode(redis)) === 'sharded' ? 'spublish' : 'publish';
}
