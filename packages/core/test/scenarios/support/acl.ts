import { aclUser } from '@lock/testing';
import type { Redis } from 'ioredis';

/**
 * S27: the least a lock user needs, found by removing one command at a time from a working set
 * (each removal broke acquire, renewal, release or waking). Keys and channels: the locker's
 * prefix (`lock:`), here limited to names under `app:`. Redis checks ACLs inside scripts too, so
 * the commands the scripts call are listed. Both protocols also need: `info` (ioredis's ready
 * check and the replica probe of `replication: 'auto'`), `evalsha` and `eval` (the fallback when
 * the server lost its script cache), `subscribe`/`unsubscribe` (waiters woken by the release
 * message; without them they fall back to polling), and `wait` once the server has replicas
 * (WAIT gating).
 *
 * Defined once for `acl.test.ts` (a few operations) and `acl-contract.test.ts` (the whole
 * contract suite): a command a protocol starts to need goes here, and both tests check it.
 */
export const COMMON_COMMANDS = ['info', 'evalsha', 'eval', 'subscribe', 'unsubscribe', 'wait'] as const;

export const ACL_COMMANDS = {
  token: [
    ...COMMON_COMMANDS,
    'hset',
    'pexpire',
    'incr',
    'hexists',
    'hincrby',
    'pttl',
    'get',
    'hget',
    'hgetall',
    'del',
    'hdel',
    'publish',
    'time',
    // The queue of waiters (a sorted set beside the lock).
    'zadd',
    'zrange',
    'zrem',
    // The fence-epoch stamp: the acquire script writes the master's run id to
    // `{lock:#}:fences:epoch` when it creates the counter, and `fence-epoch.lua` (once per
    // counter and connection) checks it and raises the counter to a new epoch when another master
    // stamped it. Without `set` locks are taken without epochs, after a warning
    // (`ERR_LOCK_FENCE_EPOCH`). Found by the contract under ACL.
    'set',
  ],
  legacy: [
    ...COMMON_COMMANDS,
    'set',
    'get',
    'type',
    'time',
    'hset',
    'hmget',
    'pexpire',
    // The owner record takes its lock key's expiry as it stands (Redis 7); refused, the record
    // falls back to a relative TTL.
    'pexpiretime',
    'pexpireat',
    'pttl',
    'incr',
    'del',
    'publish',
    // Re-entry: the owner record `{<name>}:owner` counts holds (the contract's re-entry tests;
    // acl.test.ts never re-enters). Found by the contract under ACL.
    'hincrby',
    // Optional: a hash found at the owner record's key is told from ours by its size (refused,
    // the scripts fall back to requiring our owner and value fields).
    'hlen',
  ],
} as const satisfies Record<string, readonly string[]>;

export type AclProtocol = keyof typeof ACL_COMMANDS;

/** The locker prefix whose names the ACL user may lock: `lock:` with names under `app:`. */
export const ACL_PREFIX = 'lock:app:';

/**
 * Key patterns of the ACL user. `{lock:#}:fences`: the fence counter every lock of the `lock:`
 * prefix shares (see `fenceCounter`); `{lock:#}:fences:epoch`: which master last stamped that
 * counter (the fence-epoch stamp, see `set` above).
 */
export const ACL_KEYS = ['{lock:app:*', 'lock:app:*', '{lock:#}:fences', '{lock:#}:fences:epoch'] as const;

/** Channel patterns of the ACL user: the release messages of its locks. */
export const ACL_CHANNELS = ['{lock:app:*', 'lock:app:*'] as const;

/**
 * Gives the ACL user `user` the patterns above and the commands `protocol` needs. Not reset: a
 * user that exists keeps its other passwords, and `password` is added to them.
 */
export async function setAclUser(
  admin: Redis,
  user: string,
  password: string,
  protocol: AclProtocol,
): Promise<void> {
  await aclUser(admin, {
    name: user,
    password,
    keys: ACL_KEYS,
    channels: ACL_CHANNELS,
    commands: ACL_COMMANDS[protocol],
  });
}
