import { Redis, type RedisOptions } from 'ioredis';
import { startProxy, type TcpProxy } from './proxy.js';
import type { Address } from './server.js';

/** Options of `proxiedClient`. */
export interface ProxiedClientOptions {
  /**
   * ioredis options of the client, e.g. `{ commandTimeout: 300 }`; `host` and `port` are the
   * proxy's and cannot be overridden. Default: none (ioredis defaults).
   */
  redis?: Omit<RedisOptions, 'host' | 'port'>;
}

/** An ioredis client whose connection runs through a fault proxy in front of one server. */
export interface ProxiedClient {
  /** The proxy between `redis` and the server: switch its mode to break the connection. */
  readonly proxy: TcpProxy;
  /** The client, connected through `proxy`; its connection errors are swallowed (tests break it on purpose). */
  readonly redis: Redis;
  /**
   * Disconnects `redis` and stops `proxy`; the server is left running. Idempotent. Rejects as
   * `proxy.stop()` does when the proxy's listener failed while it ran.
   */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts a fault proxy in front of `target` (e.g. a `RedisServer`) and an ioredis client through
 * it, in `pass` mode. Resolves once the client answered a PING, so its connection is open before
 * any fault is switched on.
 */
export async function proxiedClient(
  target: Address,
  options: ProxiedClientOptions = {},
): Promise<ProxiedClient> {
  const proxy = await startProxy({ target });
  const redis = new Redis({ ...options.redis, ...proxy.redisOptions });
  redis.on('error', () => {});
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      redis.disconnect();
      await proxy.stop();
    })();
    return closed;
  };
  try {
    await redis.ping();
  } catch (error) {
    await close();
    throw error;
  }
  return { proxy, redis, close, [Symbol.asyncDispose]: close };
}
