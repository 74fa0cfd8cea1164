import {
  type RedisServer,
  type RedisServerOptions,
  startProxy,
  startRedis,
  type TcpProxy,
  waitFor,
} from '@lock/testing';
import { Redis } from 'ioredis';

/**
 * A master, one replica that reaches it only through a TCP proxy (so a test can cut the
 * replication link: iptables is not available here), and three sentinels.
 */
export interface PartitionedSentinel {
  readonly master: RedisServer;
  readonly replica: RedisServer;
  /** The replication link: `link.blackhole()` partitions master and replica, clients still reach both. */
  readonly link: TcpProxy;
  readonly sentinels: readonly RedisServer[];
  readonly masterName: string;
  /** A sentinel-backed client (disconnected by `stop()`). */
  client(): Redis;
  /** Waits until the replica has applied everything the master wrote so far (call it before a cut). */
  synced(): Promise<void>;
  /** Waits until the sentinels name the replica as master and it answers as one; resolves with ms taken. */
  promoted(): Promise<number>;
  stop(): Promise<void>;
}

const masterName = 'scenario';

export async function startPartitionedSentinel(
  options: { replica?: RedisServerOptions } = {},
): Promise<PartitionedSentinel> {
  const started: { stop(): Promise<void> }[] = [];
  const clients: Redis[] = [];
  try {
    const master = await startRedis();
    started.push(master);
    const link = await startProxy({ target: master });
    started.push(link);
    const replica = await startRedis({
      ...options.replica,
      config: { ...options.replica?.config, replicaof: `${link.host} ${link.port}` },
    });
    started.push(replica);
    const replicaAdmin = replica.client();
    await waitFor('the replica to sync through the link', async () =>
      (await replicaAdmin.info('replication')).includes('master_link_status:up'),
    );
    const sentinels = await Promise.all(
      [0, 1, 2].map(() =>
        startRedis({
          sentinel: true,
          config: {
            'sentinel monitor': `${masterName} ${master.host} ${master.port} 2`,
            'sentinel down-after-milliseconds': `${masterName} 1000`,
            // Long, so the sentinels do not "fix" the replica's proxied master address meanwhile.
            'sentinel failover-timeout': `${masterName} 120000`,
          },
        }),
      ),
    );
    started.push(...sentinels);
    const admins = sentinels.map((sentinel) => sentinel.client({ commandTimeout: 1_000 }));
    await waitFor('every sentinel to see the replica and the other sentinels', async () => {
      for (const admin of admins) {
        const replicas = (await admin.call('SENTINEL', 'REPLICAS', masterName)) as string[][];
        const peers = (await admin.call('SENTINEL', 'SENTINELS', masterName)) as unknown[];
        const seen = replicas.some((row) => {
          const field = (name: string) => row[row.indexOf(name) + 1];
          return field('port') === String(replica.port) && !/disconnected|down/.test(field('flags') ?? '');
        });
        if (!seen || peers.length < 2) return false;
      }
      return true;
    });
    const sentinelOptions = {
      sentinels: sentinels.map(({ host, port }) => ({ host, port })),
      name: masterName,
    };
    return {
      master,
      replica,
      link,
      sentinels,
      masterName,
      client() {
        const client = new Redis(sentinelOptions);
        client.on('error', () => {});
        clients.push(client);
        return client;
      },
      async synced() {
        const offset = (text: string, field: string) => Number(new RegExp(`${field}:(\\d+)`).exec(text)?.[1]);
        const target = offset(await master.client().info('replication'), 'master_repl_offset');
        await waitFor(
          'the replica to catch up with the master',
          async () => offset(await replicaAdmin.info('replication'), 'slave_repl_offset') >= target,
        );
      },
      async promoted() {
        const start = performance.now();
        await waitFor(
          'the sentinels to promote the replica',
          async () => {
            for (const admin of admins) {
              const [, port] = (await admin.call(
                'SENTINEL',
                'GET-MASTER-ADDR-BY-NAME',
                masterName,
              )) as string[];
              if (Number(port) !== replica.port) return false;
            }
            return (await replicaAdmin.info('replication')).includes('role:master');
          },
          { timeout: 30_000, interval: 50 },
        );
        return performance.now() - start;
      },
      async stop() {
        for (const client of clients) client.disconnect();
        for (const one of started.reverse()) await one.stop();
      },
    };
  } catch (error) {
    for (const client of clients) client.disconnect();
    for (const one of started.reverse()) await one.stop();
    throw error;
  }
}
