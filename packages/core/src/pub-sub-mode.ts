import { detached } from './engine/detached.js';
import { InvalidOptionError } from './errors.js';
import type { RedisClient } from './protocol.js';
import { isCluster } from './topology.js';

/** How release messages travel: sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`) or plain. */
export type PubSubMode = 'sharded' | 'plain';

/**
 * The `pubSub` option of a locker on a cluster client: `'auto'` (the mode a locker given
 * `'sharded'` or `'plain'` forced on the client, else the probe's answer, as Redisson's `AUTO`),
 * or a forced mode (Redisson's `ON` / `OFF`).
 */
export type PubSubOption = 'auto' | PubSubMode;

/**
 * The `pubSub` option of `createLocker`: a `PubSubOption`, or `'poll'`, waiters that never
 * subscribe and are never queued in Redis, polling with the backoff instead (see "Polling" in the
 * README). Releases still publish, for other lockers' waiters.
 */
export type LockerPubSubOption = PubSubOption | 'poll';

/** The `pubSub` values a Redisson client takes (`checkPubSub`'s default). */
const OPTIONS: readonly PubSubOption[] = ['auto', 'sharded', 'plain'];

/** The `pubSub` values `createLocker` takes. */
export const LOCKER_PUB_SUB: readonly LockerPubSubOption[] = [...OPTIONS, 'poll'];

/**
 * Per cluster client, the mode every release and subscription on it uses: a string when a locker
 * forced it, the probe's promise otherwise. One entry per client, so that its publishers and its
 * subscriber cannot part ways.
 */
const modes = new WeakMap<RedisClient, PubSubMode | Promise<PubSubMode>>();

/**
 * The mode a locker's `pubSub` forced on this client, or else Redisson's AUTO mode: sharded pub/sub
 * only on a cluster whose servers answer `PUBSUB SHARDNUMSUB` (Redis 7+, Valkey); plain pub/sub
 * everywhere else, a Redis 6 cluster included (its `PUBLISH` reaches every node). Asked once per
 * client, and kept only for a definite answer: an unknown subcommand means Redis 6; an ACL refusal
 * (`NOPERM`) cannot tell, and means sharded, what every Redis 7 cluster has; anything else (a
 * connection failure, `CLUSTERDOWN`, `LOADING`) is asked again next time.
 */
export function pubSubMode(redis: RedisClient): PubSubMode | Promise<PubSubMode> {
  if (!isCluster(redis)) return 'plain';
  const known = modes.get(redis);
  if (known) return known;
  // Asked for the client, not for the call that first needs it: kept out of that call's trace.
  const answer = detached(() => redis.call('PUBSUB', 'SHARDNUMSUB', '0')).then(
    (): PubSubMode => 'sharded',
    (error: unknown): PubSubMode => {
      const message = error instanceof Error ? error.message : '';
      if (/unknown (sub)?command/i.test(message)) return 'plain';
      if (message.startsWith('NOPERM')) return 'sharded';
      modes.delete(redis);
      throw error;
    },
  );
  modes.set(redis, answer);
  return answer;
}

/**
 * Checks a locker's `pubSub` option for `redis`, recording nothing (see `forcePubSub`). Refuses a
 * value not in `allowed` (default: a Redisson client's, without `'poll'`), and a forced mode the
 * client cannot take: another locker forced the other one, or the client was probed already, and
 * what subscribed or published on it since used the answer. Off a cluster neither can be (nothing
 * is forced or probed there): every mode is accepted, and pub/sub stays plain. `'poll'` forces
 * nothing, and is accepted on any client that allows it.
 */
export function checkPubSub(value: unknown, redis: RedisClient): PubSubOption;
export function checkPubSub<T extends LockerPubSubOption>(
  value: unknown,
  redis: RedisClient,
  allowed: readonly T[],
): T;
export function checkPubSub(
  value: unknown,
  redis: RedisClient,
  allowed: readonly LockerPubSubOption[] = OPTIONS,
): LockerPubSubOption {
  if (allowed.length === 0) {
    throw new InvalidOptionError('allowed', allowed, `one or more of ${listed(LOCKER_PUB_SUB)}`);
  }
  if (value === undefined) return 'auto';
  if (!(allowed as readonly unknown[]).includes(value)) {
    throw new InvalidOptionError('pubSub', value, `${listed(allowed)}${refusalNote(value, allowed)}`);
  }
  const option = value as LockerPubSubOption;
  if (option === 'auto' || option === 'poll') return option;
  const known = modes.get(redis);
  if (known === undefined || known === option) return option;
  throw new InvalidOptionError(
    'pubSub',
    option,
    typeof known === 'string'
      ? `'${known}' or 'auto': another locker forced '${known}' on this client, and one client ` +
          'publishes and subscribes one way; give this locker a client of its own'
      : "'auto': this client's mode was probed before, and its releases and subscriptions may use " +
          'the answer; give the mode to the first locker made on the client, or this locker a client of its own',
  );
}

/** `'a', 'b' or 'c'`; `'a'` alone. */
function listed(values: readonly string[]): string {
  const quoted = values.map((value) => `'${value}'`);
  const last = quoted.pop();
  return quoted.length === 0 ? `${last}` : `${quoted.join(', ')} or ${last}`;
}

/** What a refused value may have been meant as, for values a user of Redisson or of `createLocker` may try. */
function refusalNote(value: unknown, allowed: readonly LockerPubSubOption[]): string {
  if (value === 'poll') {
    // Refused by the default only, which is a Redisson client's.
    return allowed === OPTIONS
      ? "; 'poll' is createLocker's: a Redisson client's waiters listen for unlocks, as Java's do"
      : '';
  }
  if (value !== 'off') return '';
  // Redisson's shardedSubscriptionMode OFF is plain pub/sub, not none.
  const note = "; 'off' is ambiguous: Redisson's shardedSubscriptionMode OFF is 'plain' here";
  return allowed.includes('poll') ? `${note}, and waiters without pub/sub are 'poll'` : note;
}

/** Forces a mode `checkPubSub` accepted on `redis`, once the locker is made: its every release and subscription then use it, probing nothing. */
export function forcePubSub(redis: RedisClient, option: PubSubOption): void {
  if (option !== 'auto' && isCluster(redis)) modes.set(redis, option);
}

type PublishCommand = 'PUBLISH' | 'SPUBLISH';

const commandIn = (mode: PubSubMode): PublishCommand => (mode === 'sharded' ? 'SPUBLISH' : 'PUBLISH');

/** The command that publishes a release from inside a script on `redis` (see `pubSubMode`): known at once off a cluster or when forced. */
export function publishCommand(redis: RedisClient): PublishCommand | Promise<PublishCommand> {
  const mode = pubSubMode(redis);
  return typeof mode === 'string' ? commandIn(mode) : mode.then(commandIn);
}
