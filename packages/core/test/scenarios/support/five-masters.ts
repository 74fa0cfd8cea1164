import {
  type RedisServer,
  type RedisServerOptions,
  startProxy,
  startRedis,
  type TcpProxy,
} from '@lock/testing';
import { Redis } from 'ioredis';

/**
 * Five independent masters for the RedLock scenarios of Kleppmann's first counterexample:
 * client A reaches masters 0, 1, 2 directly and masters 3, 4 only through proxies that a test
 * blackholes, so A's lock lands on exactly {0, 1, 2}; client B reaches all five directly.
 */
export interface FiveMasters {
  readonly servers: readonly RedisServer[];
  /** A's connections: direct to 0–2, through `unreachable` to 3–4. */
  readonly clientsA: readonly Redis[];
  readonly clientsB: readonly Redis[];
  /** The proxies in front of masters 3 and 4 for A. */
  readonly unreachable: readonly TcpProxy[];
  stop(): Promise<void>;
}

/** Starts the five masters; master 2 gets `middle` options (persistence, a skewed clock). */
export async function startFiveMasters(middle: RedisServerOptions = {}): Promise<FiveMasters> {
  const servers = await Promise.all([0, 1, 2, 3, 4].map((index) => startRedis(index === 2 ? middle : {})));
  const unreachable = await Promise.all(servers.slice(3).map((server) => startProxy({ target: server })));
  const quiet = (client: Redis) => {
    client.on('error', () => {});
    return client;
  };
  const clientOptions = { maxRetriesPerRequest: 1 };
  const clientsA = [
    ...servers.slice(0, 3).map((server) => quiet(new Redis({ ...server.redisOptions, ...clientOptions }))),
    ...unreachable.map((proxy) => quiet(new Redis({ ...proxy.redisOptions, ...clientOptions }))),
  ];
  const clientsB = servers.map((server) => quiet(new Redis({ ...server.redisOptions, ...clientOptions })));
  return {
    servers,
    clientsA,
    clientsB,
    unreachable,
    async stop() {
      for (const client of [...clientsA, ...clientsB]) client.disconnect();
      await Promise.all(unreachable.map((proxy) => proxy.stop()));
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}
