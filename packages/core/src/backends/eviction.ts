import { InvalidOptionError, UnsafeServerError } from '../errors.js';
import type { RedisClient } from '../protocol.js';
import { isCluster } from '../topology.js';

/** What to do when the server may evict lock keys or fence counters. */
export type EvictionCheck = 'warn' | 'refuse' | 'ignore';

/** Servers already warned about, so a process warns once per server however many lockers it makes. */
const warned = new Set<string>();

export function checkEvictionOption(value: unknown): EvictionCheck {
  if (value === undefined) return 'warn';
  if (value === 'warn' || value === 'refuse' || value === 'ignore') return value;
  throw new InvalidOptionError('eviction', value, "'warn', 'refuse' or 'ignore'");
}

/**
 * A check run once, before the first acquisition: with any `maxmemory-policy` but `noeviction`
 * Redis may delete a held lock (every lock key has a TTL, so even the `volatile-*` policies pick
 * it first) or a fence counter under memory pressure, and another owner then takes the lock
 * while its holder still believes it holds it. Warns once per server (`process.emitWarning`),
 * or refuses with `UnsafeServerError`. A user not allowed `CONFIG GET` (ACL) is not checked.
 */
export function evictionGate(
  redis: RedisClient,
  check: EvictionCheck,
): (resource: string) => Promise<void> | undefined {
  if (check === 'ignore') return () => undefined;
  let policy: Promise<string | undefined> | undefined;
  let safe = false;
  // Once the server was found safe (or warned about), acquisitions pay nothing, not even an await.
  return (resource) => {
    if (safe) return undefined;
    policy ??= readPolicy(redis);
    return policy.then((found) => {
      if (found === undefined || found === 'noeviction') {
        safe = true;
        return;
      }
      const error = new UnsafeServerError(
        resource,
        `maxmemory-policy is "${found}": Redis may evict a held lock or a fence counter; set it to "noeviction"`,
      );
      if (check === 'refuse') throw error;
      safe = true;
      const server = serverName(redis);
      if (warned.has(server)) return;
      warned.add(server);
      process.emitWarning(error.message, { code: error.code, type: 'LockWarning' });
    });
  };
}

async function readPolicy(redis: RedisClient): Promise<string | undefined> {
  try {
    const node = isCluster(redis) ? redis.nodes('master')[0] : redis;
    const reply = (await node?.call('CONFIG', 'GET', 'maxmemory-policy')) as string[] | undefined;
    return reply?.[1];
  } catch {
    return undefined;
  }
}

function serverName(redis: RedisClient): string {
  const options = (redis as { options?: { host?: string; port?: number } }).options;
  return `${options?.host ?? ''}:${options?.port ?? ''}`;
}
