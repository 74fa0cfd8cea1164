import { execFileSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';

/** Thrown when no redis-server can be found; the message is one line saying how to install one. */
export class RedisServerNotFoundError extends Error {
  override readonly name = 'RedisServerNotFoundError';
}

const install = 'install it (Debian/Ubuntu: `apt-get install -y redis-server`) or set REDIS_SERVER_BIN';

/** The redis-server executable: `REDIS_SERVER_BIN`, else the one on PATH. */
export function redisServerBinary(): string {
  const configured = process.env.REDIS_SERVER_BIN;
  if (configured) {
    // Checked here so that a wrong path fails as one clear line, not as a spawn ENOENT or EACCES
    // later (a directory passes the X_OK check).
    if (!isExecutableFile(configured)) {
      throw new RedisServerNotFoundError(
        `redis-server not found at REDIS_SERVER_BIN=${configured}: ${install} to an executable redis-server`,
      );
    }
    return configured;
  }
  try {
    return execFileSync('/bin/sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new RedisServerNotFoundError(`redis-server not found on PATH: ${install}`);
  }
}

function isExecutableFile(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
