import { checkEvictionOption, type EvictionCheck } from './backends/eviction.js';
import { singleBackend } from './backends/single.js';
import type { ClockSkewOptions } from './clock-skew.js';
import { createEngine, ENGINE_OPTIONS, type EngineOptions } from './engine/engine.js';
import { refuseUnknown } from './engine/options.js';
import { InvalidOptionError } from './errors.js';
import type { LockProtocol, RedisClient } from './protocol.js';
import { legacyProtocol } from './protocols/legacy/legacy.js';
import { tokenProtocol } from './protocols/token/token.js';
import { checkPubSub, forcePubSub, LOCKER_PUB_SUB, type LockerPubSubOption } from './pub-sub-mode.js';
import type { Locker, ReplicationOptions } from './types.js';

/** Options of `createLocker`. */
export interface LockerOptions extends EngineOptions {
  /** The connection: an ioredis `Redis` (standalone or sentinel-backed) or `Cluster`. Never closed by the locker. */
  readonly redis: RedisClient;
  /**
   * The wire format: a `LockProtocol`, or `'token'` / `'legacy'` (the legacy timestamp lock in
   * ms, as `legacyProtocol()`). Default: `'token'`.
   */
  readonly protocol?: LockProtocol | 'token' | 'legacy';
  /**
   * WAIT gating after each acquisition: `'auto'` (one replica within 250 ms when the server has
   * replicas), `false`, or `{ replicas, timeout }`. Default: `'auto'`.
   */
  readonly replication?: ReplicationOptions;
  /**
   * What to do when the server's `maxmemory-policy` may evict lock keys or fence counters
   * (anything but `noeviction`): `'warn'` once per server, `'refuse'` with `UnsafeServerError`,
   * or `'ignore'`. Checked before the first acquisition. Default: `'warn'`.
   */
  readonly eviction?: EvictionCheck;
  /**
   * The check of each master's clock against this process's, before the first acquisition on it
   * and after each reconnect or failover: `margin` in ms, `action` `'warn'` (once per server) or
   * `'refuse'` (`ClockSkewError`, nothing written). Only formats with a fence counter (`token`,
   * `legacy`) are checked. Default: `{ margin: 1000, action: 'warn' }`.
   */
  readonly clockSkew?: ClockSkewOptions;
  /**
   * On a cluster, how releases are published and waited for: `'auto'` (sharded pub/sub when the
   * servers answer `PUBSUB SHARDNUMSUB`, as Redisson's default `AUTO`; or the mode another locker
   * forced on this client), `'sharded'` (`SPUBLISH`/`SSUBSCRIBE`) or `'plain'`
   * (`PUBLISH`/`SUBSCRIBE`). A forced mode holds for every locker on the client, and is refused
   * when another locker forced the other one or the client was probed already. Ignored off a
   * cluster, where pub/sub is always plain. Or `'poll'`, on any deployment: waiters never
   * subscribe (the locker opens no subscriber connection) and are never queued in Redis, so a
   * release neither names them nor hands them the lock; they retry with the `retry` backoff,
   * for very many keys each waited for rarely. Default: `'auto'`.
   */
  readonly pubSub?: LockerPubSubOption;
}

/** Names the connection goes by elsewhere (node-redis, the RedLock options), refused as `redis`. */
const CLIENT_NAMES = { client: 'redis', clients: 'redis', connection: 'redis' };

/** A locker on one Redis deployment. */
export function createLocker(options: LockerOptions): Locker {
  if (typeof options !== 'object' || options === null)
    throw new InvalidOptionError('options', options, 'an object');
  // Not kept on the error: a client's options may hold its password.
  if (typeof (options as { evalsha?: unknown }).evalsha === 'function')
    throw new InvalidOptionError(
      'options',
      undefined,
      'options',
      'invalid options: an ioredis client (createLocker takes options: pass it as createLocker({ redis }))',
    );
  refuseUnknown(
    options,
    ['redis', 'protocol', 'replication', 'eviction', 'clockSkew', 'pubSub', ...ENGINE_OPTIONS],
    'the locker options',
    CLIENT_NAMES,
  );
  const { redis, protocol, replication, eviction, clockSkew, pubSub, ...engine } = options;
  if (typeof redis !== 'object' || redis === null || typeof redis.evalsha !== 'function') {
    throw new InvalidOptionError(
      'redis',
      redis,
      'an ioredis Redis or Cluster client; node-redis clients are not supported yet',
    );
  }
  const mode = checkPubSub(pubSub, redis, LOCKER_PUB_SUB);
  const backend = singleBackend(redis, protocolOf(protocol), {
    ...(replication === undefined ? {} : { replication }),
    eviction: checkEvictionOption(eviction),
    ...(clockSkew === undefined ? {} : { clockSkew }),
    ...(mode === 'poll' ? { subscriber: false } : {}),
  });
  let locker: Locker;
  try {
    locker = createEngine(backend, engine);
  } catch (error) {
    // Nothing was sent: closing only takes off what the backend listens to on the client.
    void backend.close();
    throw error;
  }
  // Not before the engine accepted its options: a refused locker must leave the client as it was.
  if (mode !== 'poll') forcePubSub(redis, mode);
  return locker;
}

function protocolOf(protocol: LockerOptions['protocol']): LockProtocol {
  if (protocol === undefined || protocol === 'token') return tokenProtocol();
  if (protocol === 'legacy') return legacyProtocol();
  if (typeof protocol === 'object' && protocol !== null && typeof protocol.acquire === 'function')
    return protocol;
  throw new InvalidOptionError('protocol', protocol, "'token', 'legacy' or a LockProtocol");
}
