import { isUnreachable } from '../engine/deadline.js';
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
 *
 * @param closes how many connections of the client closed so far, given for a client that drops
 *   what it had not had answered (`autoResendUnfulfilledCommands: false`): a question still
 *   unanswered when its connection closed is then asked again, as that client never settles it,
 *   and every acquisition would wait on it. Default: none ever (any other client sends the
 *   question again once it has reconnected).
 */
export function evictionGate(
  redis: RedisClient,
  check: EvictionCheck,
  closes: () => number = () => 0,
): (resource: string) => Promise<void> | undefined {
  if (check === 'ignore') return () => undefined;
  let policy: Promise<string | undefined | typeof UNREACHED> | undefined;
  let askedOn = 0;
  let answered = false;
  let safe = false;
  const ask = () => {
    const asked = readPolicy(redis);
    policy = asked;
    askedOn = closes();
    answered = false;
    const settled = () => {
      if (policy === asked) answered = true;
    };
    asked.then(settled, settled);
    return asked;
  };
  // Once the server was found safe (or warned about), acquisitions pay nothing, not even an await.
  return (resource) => {
    if (safe) return undefined;
    const asked = policy === undefined || (!answered && closes() !== askedOn) ? ask() : policy;
    return asked.then((found) => {
      // A master could not be asked or did not answer (a cluster client that cannot load its
      // slots, a server down): ask again next time.
      if (found === UNREACHED) {
        policy = undefined;
        return;
      }
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

const UNREACHED = Symbol('no master reached');

/**
 * The first policy other than `noeviction` among the masters (every master of a cluster: a key
 * lives on one of them), else `noeviction`; undefined when none may be read (ACL); `UNREACHED`
 * when a master did not answer. A cluster client knows its masters once it has loaded the
 * slots: a PING (which connects a lazy client, and waits for the slots as the acquisition itself
 * would) comes first.
 */
async function readPolicy(redis: RedisClient): Promise<string | undefined | typeof UNREACHED> {
  if (isCluster(redis) && redis.nodes('master').length === 0) await redis.ping().catch(() => {});
  const nodes = isCluster(redis) ? redis.nodes('master') : [redis];
  if (nodes.length === 0) return UNREACHED;
  const policies = await Promise.all(
    nodes.map((node) =>
      (node.call('CONFIG', 'GET', 'maxmemory-policy') as Promise<string[]>).then(
        (reply) => reply[1],
        // Refused (an ACL, a renamed CONFIG): never to be read. Not answered: asked again, or a
        // first check made while Redis was down would let 'refuse' pass every later acquisition.
        (error: unknown) => (isUnreachable(error) ? UNREACHED : undefined),
      ),
    ),
  );
  if (policies.includes(UNREACHED)) return UNREACHED;
  const read = policies.filter((policy) => policy !== undefined);
  return read.find((policy) => policy !== 'noeviction') ?? read[0];
}

function serverName(redis: RedisClient): string {
  const options = (redis as { options?: { host?: string; port?: number } }).options;
  return `${options?.host ?? ''}:${options?.port ?? ''}`;
}
