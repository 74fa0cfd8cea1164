import type { Redis } from 'ioredis';
import type { RedisServer } from './server.js';

const admins = new WeakMap<RedisServer, Redis>();

/**
 * The connection this library uses to set up and watch a server: one per server, fail-fast so a
 * paused or dead node turns into an error the caller's `waitFor` retries, never a hang.
 */
export function adminClient(server: RedisServer): Redis {
  let client = admins.get(server);
  if (!client) {
    client = server.client({ commandTimeout: 2_000, maxRetriesPerRequest: 1 });
    admins.set(server, client);
  }
  return client;
}
