import { type RedisServer, type RedisServerOptions, startProxy, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';

/**
 * Five independent masters for the RedLock scenarios of Kleppmann's first counterexample:
 * client A reaches masters 0, 1, 2 directly and never reaches masters 3, 4, so A's lock lands
 * on exactly {0, 1, 2}; client B reaches all five directly.
 */
export interface FiveMasters {
  readonly servers: readonly RedisServer[];
  /**
   * A's connections: direct to 0–2; to 3–4 through proxies that close every connection as it
   * opens, for as long as the test runs, with clients that refuse each command at once instead of
   * queueing it. A master that stays silent instead would hold every round of A until the node
   * timeout, which must then be short, and a short one fails the masters A does reach while a
   * loaded host connects them and loads their scripts.
   */
  readonly clientsA: readonly Redis[];
  readonly clientsB: readonly Redis[];
  stop(): Promise<void>;
}

/**
 * Starts the five masters; master 2 gets `middle` options (persistence, a skewed clock). Returns
 * once every client that reaches its master has had an answer from it.
 */
export async function startFiveMasters(middle: RedisServerOptions = {}): Promise<FiveMasters> {
  const servers = await Promise.all([0, 1, 2, 3, 4].map((index) => startRedis(index === 2 ? middle : {})));
  const closed = await Promise.all(servers.slice(3).map((server) => startProxy({ target: server })));
  for (const proxy of closed) proxy.drop();
  const quiet = (client: Redis) => {
    client.on('error', () => {});
    return client;
  };
  const clientOptions = { maxRetriesPerRequest: 1 };
  const reached = servers
    .slice(0, 3)
    .map((server) => quiet(new Redis({ ...server.redisOptions, ...clientOptions })));
  const cutOff = closed.map((proxy) =>
    quiet(new Redis({ ...proxy.redisOptions, ...clientOptions, enableOfflineQueue: false })),
  );
  const clientsA = [...reached, ...cutOff];
  const clientsB = servers.map((server) => quiet(new Redis({ ...server.redisOptions, ...clientOptions })));
  const masters: FiveMasters = {
    servers,
    clientsA,
    clientsB,
    async stop() {
      for (const client of [...clientsA, ...clientsB]) client.disconnect();
      await Promise.all(closed.map((proxy) => proxy.stop()));
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
  try {
    await Promise.all([...reached, ...clientsB].map((client) => client.ping()));
  } catch (error) {
    await masters.stop();
    throw error;
  }
  return masters;
}
