import { detached } from './engine/detached.js';
import type { RedisClient } from './protocol.js';
import { isCluster } from './topology.js';

/** How release messages travel: sharded pub/sub (`SPUBLISH`/`SSUBSCRIBE`) or plain. */
export type PubSubMode = 'sharded' | 'plain';

const probed = new WeakMap<RedisClient, Promise<PubSubMode>>();

/**
 * Redisson's AUTO mode: sharded pub/sub only on a cluster whose servers answer
 * `PUBSUB SHARDNUMSUB` (Redis 7+, Valkey); plain pub/sub everywhere else, a Redis 6 cluster
 * included (its `PUBLISH` reaches every node). Asked once per client, and kept only for a
 * definite answer: an unknown subcommand means Redis 6; an ACL refusal (`NOPERM`) cannot tell,
 * and means sharded, what every Redis 7 cluster has; anything else (a connection failure,
 * `CLUSTERDOWN`, `LOADING`) is asked again next time.
 */
export function pubSubMode(redis: RedisClient): PubSubMode | Promise<PubSubMode> {
  if (!isCluster(redis)) return 'plain';
  const known = probed.get(redis);
  if (known) return known;
  // Asked for the client, not for the call that first needs it: kept out of that call's trace.
  const answer = detached(() => redis.call('PUBSUB', 'SHARDNUMSUB', '0')).then(
    (): PubSubMode => 'sharded',
    (error: unknown): PubSubMode => {
      const message = error instanceof Error ? error.message : '';
      if (/unknown (sub)?command/i.test(message)) return 'plain';
      if (message.startsWith('NOPERM')) return 'sharded';
      probed.delete(redis);
      throw error;
    },
  );
  probed.set(redis, answer);
  return answer;
}

type PublishCommand = 'PUBLISH' | 'SPUBLISH';

const commandIn = (mode: PubSubMode): PublishCommand => (mode === 'sharded' ? 'SPUBLISH' : 'PUBLISH');

/** The command that publishes a release from inside a script on `redis` (see `pubSubMode`): known at once off a cluster. */
export function publishCommand(redis: RedisClient): PublishCommand | Promise<PublishCommand> {
  const mode = pubSubMode(redis);
  return typeof mode === 'string' ? commandIn(mode) : mode.then(commandIn);
}
