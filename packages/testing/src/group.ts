import { type RedisServer, type RedisServerOptions, startRedis } from './server.js';

/**
 * Starts `count` servers in parallel, each with `options` (or with what it answers for the
 * server's index); if one fails, stops the others before rethrowing. Every server's options are
 * asked for before any server starts: a callback that throws (a user's `node(index)`) then
 * rejects the call with nothing left running.
 */
export async function startServers(
  count: number,
  options: RedisServerOptions | ((index: number) => RedisServerOptions) = {},
): Promise<RedisServer[]> {
  const each = Array.from({ length: count }, (_, index) =>
    typeof options === 'function' ? options(index) : options,
  );
  const results = await Promise.allSettled(each.map((own) => startRedis(own)));
  const servers = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) await stopAfter(failure.reason, servers);
  return servers;
}

/**
 * One node's options over those of every node: its own fields win, `config` and `env` are merged
 * key by key, so a node can add one directive or variable without repeating the others.
 */
export function nodeOptions(
  server: RedisServerOptions | undefined,
  own: RedisServerOptions | undefined,
): RedisServerOptions {
  return {
    ...server,
    ...own,
    env: { ...server?.env, ...own?.env },
    config: { ...server?.config, ...own?.config },
  };
}

/**
 * Stops the servers a failed setup started, then throws its error: the one that says what went
 * wrong, also when a stop fails too (then both, in an `AggregateError`, the setup's first).
 */
export async function stopAfter(error: unknown, servers: readonly RedisServer[]): Promise<never> {
  try {
    await stopServers(servers);
  } catch (stopError) {
    throw new AggregateError([error, stopError], 'setup failed, and so did stopping its servers');
  }
  throw error;
}

/**
 * Stops servers in parallel and waits for every stop, also after one failed: a caller that moved
 * on at the first rejection would leave the other processes running. Rethrows the failure, or an
 * `AggregateError` of them all when several failed.
 */
export async function stopServers(servers: readonly RedisServer[]): Promise<void> {
  await stopGroups([servers]);
}

/**
 * Stops each group in parallel, the groups one after the other (e.g. sentinels before the nodes
 * they watch), going on to the next group when one failed; throws as `stopServers` does.
 */
export async function stopGroups(groups: readonly (readonly RedisServer[])[]): Promise<void> {
  const failures: unknown[] = [];
  for (const servers of groups) {
    const results = await Promise.allSettled(servers.map((server) => server.stop()));
    for (const result of results) if (result.status === 'rejected') failures.push(result.reason);
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} servers failed to stop`);
}
