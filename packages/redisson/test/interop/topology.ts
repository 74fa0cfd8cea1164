import { type RedisServer, startCluster, startRedis } from '@lock/testing';
import type { Cluster, Redis } from 'ioredis';

/** Where an interop run happens, with what the peer and the assertions need. */
export interface Topology {
  /** The package's connection. */
  readonly redis: Redis | Cluster;
  /** The Java peer's command and subscriber connections. */
  readonly peerRedis: Redis | Cluster;
  readonly peerSubscriber: Redis | Cluster;
  /** Whether Redisson's AUTO mode picks sharded pub/sub here (a Redis 7 cluster). */
  readonly sharded: boolean;
  /** How many clients are subscribed to `channel` (sharded channels on a cluster). */
  subscribers(channel: string): Promise<number>;
  /** Empties every master. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

export async function singleNode(): Promise<Topology> {
  const server: RedisServer = await startRedis();
  const admin = server.client();
  return {
    redis: server.client(),
    peerRedis: server.client(),
    peerSubscriber: server.client(),
    sharded: false,
    async subscribers(channel) {
      const [, count] = (await admin.pubsub('NUMSUB', channel)) as [string, number];
      return count;
    },
    flush: async () => {
      await admin.flushall();
    },
    stop: () => server.stop(),
  };
}

export async function threeMasterCluster(): Promise<Topology> {
  const cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  const admins = cluster.masters.map((master) => master.client());
  return {
    redis: cluster.client(),
    peerRedis: cluster.client(),
    peerSubscriber: cluster.client({ shardedSubscribers: true }),
    sharded: true,
    async subscribers(channel) {
      const counts = await Promise.all(
        admins.map(
          async (admin) => ((await admin.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1],
        ),
      );
      return counts.reduce((sum, count) => sum + count, 0);
    },
    flush: async () => {
      await Promise.all(admins.map((admin) => admin.flushall()));
    },
    stop: () => cluster.stop(),
  };
}
