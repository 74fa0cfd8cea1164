import { execFileSync } from 'node:child_process';

/** Thrown when no redis-server can be found; the message says how to install one. */
export class RedisServerNotFoundError extends Error {
  override readonly name = 'RedisServerNotFoundError';
}

/** The redis-server executable: `REDIS_SERVER_BIN`, else the one on PATH. */
export function redisServerBinary(): string {
  const configured = process.env.REDIS_SERVER_BIN;
  if (configured) return configured;
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new RedisServerNotFoundError(
      'redis-server not found: install it (Debian/Ubuntu: `apt-get install -y redis-server`) or set REDIS_SERVER_BIN',
    );
  }
}
