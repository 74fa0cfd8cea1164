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
