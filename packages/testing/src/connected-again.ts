import type { Redis } from 'ioredis';

/**
 * Connects `redis` again each time ioredis ends it, until the returned function is called (call
 * it before closing the client). ioredis (5 and 6) ends a Sentinel client with `failoverDetector`
 * for good when a `+switch-master` reaches the failover detector of the connection just lost
 * while the client asks the sentinels for the new master: that reconnection fails with
 * "Connection is closed". A test that kills a master under such a client is about what happens
 * after the failover, not about that.
 */
export function connectedAgainOnEnd(redis: Redis): () => void {
  let stopped = false;
  const again = () => {
    if (!stopped) redis.connect().catch(() => {});
  };
  redis.on('end', again);
  return () => {
    stopped = true;
    redis.off('end', again);
  };
}
