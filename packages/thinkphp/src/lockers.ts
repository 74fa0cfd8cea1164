import { createLocker, type Locker, legacyProtocol, type RedisClient } from '@lock/core';
import type { Redis } from 'ioredis';
import { connectThinkRedis } from './connection.js';
import type { ThinkEnv } from './env.js';

// Lock objects are as cheap as the PHP ones: they share one locker per connection and skew
// margin, and `{ env }` locks share one connection per env.
const lockers = new WeakMap<RedisClient, Map<number, Locker>>();
const envClients = new Map<ThinkEnv, Redis>();

/** The legacy-protocol locker (seconds, exact key bytes) for a connection. */
export function lockerFor(redis: RedisClient, skewMargin: number): Locker {
  let byMargin = lockers.get(redis);
  if (!byMargin) {
    byMargin = new Map();
    lockers.set(redis, byMargin);
  }
  let locker = byMargin.get(skewMargin);
  if (!locker) {
    locker = createLocker({ redis, protocol: legacyProtocol({ unit: 's', skewMargin }), prefix: '' });
    byMargin.set(skewMargin, locker);
  }
  return locker;
}

/** The shared connection of an env, opened on first use. */
export function clientFor(env: ThinkEnv): Redis {
  let client = envClients.get(env);
  if (!client) {
    client = connectThinkRedis(env);
    envClients.set(env, client);
  }
  return client;
}

/** Closes the lockers and connections opened for `{ env }` locks. */
export async function closeEnvClients(): Promise<void> {
  const clients = [...envClients.values()];
  envClients.clear();
  await Promise.all(
    clients.map(async (client) => {
      for (const locker of lockers.get(client)?.values() ?? []) await locker.close();
      lockers.delete(client);
      await client.quit();
    }),
  );
}
