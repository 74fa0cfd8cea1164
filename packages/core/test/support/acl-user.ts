import { aclUser } from '@lock/testing';
import type { Redis } from 'ioredis';

/** The token protocol's commands as the README lists them for an ACL user. */
export const TOKEN_COMMANDS =
  'evalsha eval set incr hset pexpire hexists hget hincrby pttl get del hgetall publish subscribe unsubscribe ping time zadd zrange zrem hdel info wait';

/** Makes the user `locker` (password `secret`) anew, limited to the lock keys and channels and to `commands`. */
export function grantLocker(admin: Redis, commands: string): Promise<unknown> {
  return aclUser(admin, {
    name: 'locker',
    password: 'secret',
    reset: true,
    keys: ['{lock:*'],
    channels: ['{lock:*'],
    commands: commands.split(' '),
  });
}
