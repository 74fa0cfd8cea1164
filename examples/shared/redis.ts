/**
 * The Redis client of every example that connects to a URL (REDIS_URL or its own redis-server).
 * It connects before the example starts: when Redis cannot be reached, the process prints one
 * line, `cannot reach Redis at <url>: <reason>`, and exits with code 1 at once, instead of
 * queueing commands behind ioredis's reconnect attempts and printing each failed one as an
 * unhandled `error` event. Once connected, ioredis reconnects as usual: an outage is reported
 * once when it starts and once when the connection is back.
 */
import { Redis, type RedisOptions } from 'ioredis';

export async function connectRedis(url: string, options: RedisOptions = {}): Promise<Redis> {
  const redis = new Redis(url, { ...options, lazyConnect: true });
  let connected = false;
  let lastError: Error | undefined;
  let down = false;
  redis.on('error', (error: Error) => {
    lastError = error;
    if (!connected || down) return;
    down = true;
    console.warn(`redis: ${error.message} (reconnecting)`);
  });
  redis.on('ready', () => {
    if (down) console.warn('redis: reconnected');
    down = false;
  });
  try {
    // Rejects at the first failed attempt ("Connection is closed."): the reason is the error
    // event just before it.
    await redis.connect();
  } catch (error) {
    redis.disconnect();
    console.error(`cannot reach Redis at ${url}: ${(lastError ?? (error as Error)).message}`);
    process.exit(1);
  }
  connected = true;
  return redis;
}
