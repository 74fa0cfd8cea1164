import type { Cluster } from 'ioredis';
import type { RedisClient } from './protocol.js';

/** Whether the client is an ioredis `Cluster` (slot rules and sharded pub/sub apply). */
export function isCluster(redis: RedisClient): redis is Cluster {
  return (redis as { isCluster?: boolean }).isCluster === true;
}
