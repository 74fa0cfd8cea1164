import { type RedisServer, type RedisServerOptions, startRedis } from './server.js';

/** Starts `count` servers in parallel; if one fails, stops the others before rethrowing. */
export async function startServers(count: number, options: RedisServerOptions = {}): Promise<RedisServer[]> {
  const results = await Promise.allSettled(Array.from({ length: count }, () => startRedis(options)));
  const servers = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) {
    await stopServers(servers);
    throw failure.reason;
  }
  return servers;
}

/** Stops servers in parallel. */
export async function stopServers(servers: readonly RedisServer[]): Promise<void> {
  await Promise.all(servers.map((server) => server.stop()));
}
