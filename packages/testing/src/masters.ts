import type { Redis, RedisOptions } from 'ioredis';
import { startServers, stopServers } from './group.js';
import type { RedisServer, RedisServerOptions } from './server.js';
import { checkInteger } from './validate.js';

/** Independent masters that share nothing, as RedLock wants them. */
export interface RedisMasters {
  readonly servers: readonly RedisServer[];
  /** `redis://` URLs, one per master. */
  readonly urls: readonly string[];
  /** One new ioredis client per master; `stop()` disconnects them. */
  clients(options?: RedisOptions): Redis[];
  /** Stops every master. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts `count` independent redis-server masters (default 3) in parallel. */
export async function startMasters(count = 3, options: RedisServerOptions = {}): Promise<RedisMasters> {
  checkInteger('count', count, 1);
  const servers = await startServers(count, options);
  const stop = () => stopServers(servers);
  return {
    servers,
    urls: servers.map((server) => server.url),
    clients: (clientOptions) => servers.map((server) => server.client(clientOptions)),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
