/** Commands that run a script or function: their arguments are the lock's keys and ARGV, owner tokens included. */
const SCRIPT = /^(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro)$/i;
/** Of those, the ones whose first argument is the script's source rather than its name or digest. */
const SOURCE = /^eval(_ro)?$/i;

/**
 * An owner as core and Redisson make them, `<uuid>:<n>` (after the locker's id, if it has one):
 * found in the channel a Redisson fair lock's waiter subscribes to and in a Redisson reader's keys.
 */
const OWNER = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:\d+/gi;

/**
 * For every other command, how many leading arguments the statement shows: the policy of the
 * default serializer of `@opentelemetry/instrumentation-ioredis` 0.71, restated, so switching
 * serializers changes nothing but scripts. The first matching prefix wins; a command matching
 * none shows no argument. Values (of SET, HSET, PUBLISH, …) and secrets (ACL, CONFIG) stay out.
 */
const SHOWN: readonly (readonly [shown: number, prefixes: readonly string[]])[] = (
  [
    [0, 'ECHO'],
    [1, 'ACL CONFIG GETSET LPUSH MSET PFA PSETEX PUBLISH RPUSH SADD SET SPUBLISH XADD ZADD'],
    [2, 'HSET HMSET LSET LINSERT'],
    [
      Number.POSITIVE_INFINITY,
      `BIT BL BR BZ CLIENT CLUSTER COMMAND DECR DEL EVAL EX FUNCTION GEO GET HINCR HMGET HSCAN INCR
       LT LR LL LM MEMORY PE PF PI PS PT PU RPOP SC SD SI SM SO SR SS SU
       XACK XC XD XG XI XL XP XR XT ZC ZD ZI ZL ZM ZP ZR ZS`,
    ],
  ] as const
).map(([shown, prefixes]) => [shown, prefixes.split(/\s+/)] as const);

/**
 * A `dbStatementSerializer` for `@opentelemetry/instrumentation-ioredis` that never records a
 * lock's owner token. Its default serializer records every EVAL/EVALSHA argument, and the
 * arguments of lock scripts are owner tokens: whoever reads the trace could release or extend
 * the lock. Scripts show only their digest (or function name) and key count:
 * `evalsha 5d8c… 2 [3 other arguments]`; `eval` shows `[script]` for the source. Every other
 * command is shown as the default serializer shows it, but for the owners named in its channels
 * or keys, shown as `[owner]`.
 *
 * ```ts
 * new IORedisInstrumentation({ dbStatementSerializer });
 * ```
 */
export function dbStatementSerializer(command: string, args: readonly unknown[]): string {
  if (SCRIPT.test(command)) return scriptStatement(command, args);
  const upper = command.toUpperCase();
  const shown = SHOWN.find(([, prefixes]) => prefixes.some((prefix) => upper.startsWith(prefix)))?.[0] ?? 0;
  const visible = args.slice(0, shown).map((arg) => String(arg).replace(OWNER, '[owner]'));
  return statement(command, visible, args.length - Math.min(shown, args.length));
}

function scriptStatement(command: string, args: readonly unknown[]): string {
  if (args.length < 2) return statement(command, [], args.length);
  const script = SOURCE.test(command) ? '[script]' : String(args[0]);
  const keys = String(args[1]);
  // A key count that is not a number is an argument like any other: it could be anything.
  return /^\d+$/.test(keys)
    ? statement(command, [script, keys], args.length - 2)
    : statement(command, [script], args.length - 1);
}

function statement(command: string, shown: readonly string[], hidden: number): string {
  const parts = hidden > 0 ? [...shown, `[${hidden} other arguments]`] : shown;
  return parts.length > 0 ? `${command} ${parts.join(' ')}` : command;
}
