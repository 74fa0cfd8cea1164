import type { Redis } from 'ioredis';
import { adminClient } from './admin.js';
import { RedisServer } from './server.js';

/** An ACL user made by `aclUser`: its keys, channels and commands are exactly those given. */
export interface AclUserOptions {
  /** The user name. Required. */
  name: string;
  /**
   * A password of the user (`>password`), added to those it already has unless `reset`.
   * Required.
   */
  password: string;
  /**
   * Commands, subcommands (`config|get`) or categories (`@read`) the user may run; everything
   * else is denied (`-@all` first). Default: none.
   */
  commands?: readonly string[];
  /** Key patterns (`~pattern`) the user may touch; they replace its earlier ones. Default: none. */
  keys?: readonly string[];
  /**
   * Pub/sub channel patterns (`&pattern`; `*` is every channel) the user may use; they replace
   * its earlier ones. Default: none.
   */
  channels?: readonly string[];
  /**
   * Start from a blank user (`reset`): without it an existing user keeps its other passwords
   * (and selectors), so two calls give it two passwords. Default: `false`.
   */
  reset?: boolean;
}

/** Credentials of the user for an ioredis client, e.g. `server.client(login)`. */
export interface AclLogin {
  username: string;
  password: string;
}

/**
 * Creates or updates an enabled ACL user in one `ACL SETUSER`, through `target` (a client of a
 * user allowed to run it, or a server, reached through its admin connection).
 */
export async function aclUser(target: RedisServer | Redis, options: AclUserOptions): Promise<AclLogin> {
  const { name, password, commands = [], keys = [], channels = [], reset = false } = options;
  const admin = target instanceof RedisServer ? adminClient(target) : target;
  await admin.call(
    'ACL',
    'SETUSER',
    name,
    ...(reset ? ['reset'] : []),
    'on',
    `>${password}`,
    'resetkeys',
    ...keys.map((pattern) => `~${pattern}`),
    'resetchannels',
    ...channels.map((pattern) => `&${pattern}`),
    '-@all',
    ...commands.map((command) => `+${command}`),
  );
  return { username: name, password };
}
