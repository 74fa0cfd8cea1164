import type { RedisClient } from '@lock/core';

/** Every key of the client's keyspace (each master's, on a cluster) whose TTL is -1. */
export async function keysWithoutTtl(client: RedisClient): Promise<string[]> {
  const nodes = 'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client];
  const found: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) if ((await node.pttl(key)) === -1) found.push(key);
    } while (cursor !== '0');
  }
  return found;
}

/** Every pub/sub channel (plain and sharded) some connection is subscribed to, on every master. */
export async function subscribedChannels(client: RedisClient): Promise<string[]> {
  const nodes = 'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client];
  const found: string[] = [];
  for (const node of nodes) {
    found.push(...((await node.call('PUBSUB', 'CHANNELS')) as string[]));
    found.push(...((await node.call('PUBSUB', 'SHARDCHANNELS')) as string[]));
  }
  return found;
}

/**
 * Resolves once a waiter is subscribed to a release channel naming `key` (so it is waiting, not
 * about to start), polling every 5 ms for at most `limit` ms.
 */
export async function waiterSubscribed(
  clients: readonly RedisClient[],
  key: string,
  limit = 5_000,
): Promise<void> {
  const until = performance.now() + limit;
  while (performance.now() < until) {
    const channels = (await Promise.all(clients.map(subscribedChannels))).flat();
    if (channels.some((channel) => channel.includes(key))) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`no waiter subscribed to a channel of "${key}" within ${limit} ms`);
}
