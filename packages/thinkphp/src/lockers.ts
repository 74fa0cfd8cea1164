import {
  bounded,
  createLocker,
  DEFAULT_COMMAND_TIMEOUT,
  detached,
  type InvalidOptionError,
  type Locker,
  LockerClosedError,
  legacyProtocol,
  orDefault,
  type RedisClient,
} from '@lock/core';
import type { Redis } from 'ioredis';
import { connectThinkRedis, databaseRefused } from './connection.js';
import type { ThinkEnv } from './env.js';

// Lock objects are as cheap as the PHP ones: they share one locker per connection, clock
// settings and command timeout, and `{ env }` locks share one connection per env.
const lockers = new WeakMap<RedisClient, Map<string, Locker>>();
const envClients = new Map<ThinkEnv, Redis>();
/**
 * Why an env connection is closed for good: the server refused its `redis.database`, or
 * `Lock.disconnect()` closed it.
 */
const closedClients = new WeakMap<RedisClient, InvalidOptionError | LockerClosedError>();

/** The PHP hosts' clocks as `Lock` options give them (the legacy protocol's defaults when not). */
export interface PeerClocks {
  readonly skewMargin?: number;
  readonly peerClockAhead?: number;
}

/** The legacy-protocol locker (seconds, exact key bytes) for a connection. */
export function lockerFor(
  redis: RedisClient,
  { skewMargin, peerClockAhead }: PeerClocks,
  commandTimeout: number,
): Locker {
  let bySettings = lockers.get(redis);
  if (!bySettings) {
    bySettings = new Map();
    lockers.set(redis, bySettings);
  }
  // JSON keeps '2000' apart from 2000: a value of the wrong type never finds the locker made for
  // a good one, and is refused when its own is made. The protocol's defaults (2 s each) fill in
  // what was left out, so that an option left out and one given as its default share a locker.
  // A null is not left out: it gets a locker of its own, which refuses it.
  const settings = JSON.stringify([
    orDefault(skewMargin, 2_000),
    orDefault(peerClockAhead, 2_000),
    commandTimeout,
  ]);
  let locker = bySettings.get(settings);
  if (!locker) {
    locker = createLocker({
      redis,
      protocol: legacyProtocol({ unit: 's', skewMargin, peerClockAhead }),
      prefix: '',
      commandTimeout,
    });
    bySettings.set(settings, locker);
  }
  return locker;
}

/** The shared connection of an env, opened on first use. */
export function clientFor(env: ThinkEnv): Redis {
  const shared = envClients.get(env);
  if (shared) return shared;
  // The first lock made with `env` may be made inside a request: the connection outlives it,
  // and its reconnects must not be traced in that request.
  const client = detached(() => connectThinkRedis(env));
  // Nobody else can listen to this client, and ioredis prints "Unhandled error event" for each
  // failed reconnect of a client nobody listens to: while Redis is down, every 2 s. The
  // failure reaches the caller in the LockUnavailableError of its lock() or unlock().
  client.on('error', (error: unknown) => {
    // ioredis only reports a refused SELECT here, then runs every command on db 0, where PHP
    // never looks. Closed now, before it is ready, it sends none of them.
    if (!isSelectRefusal(error)) return;
    closedClients.set(client, databaseRefused(env, error.message));
    client.disconnect();
  });
  envClients.set(env, client);
  return client;
}

/** Why `redis`, an env connection, was closed for good; undefined while it may serve. */
export function closedReason(redis: RedisClient): InvalidOptionError | LockerClosedError | undefined {
  return closedClients.get(redis);
}

/** The error ioredis reports when the server answers the SELECT of its `db` with an error. */
function isSelectRefusal(error: unknown): error is Error {
  return (
    error instanceof Error &&
    error.name === 'ReplyError' &&
    (error as { command?: { name?: unknown } }).command?.name === 'select'
  );
}

/** Settles once every call of `closeEnvClients` so far is done; never rejects. */
let closing: Promise<void> = Promise.resolve();

/**
 * Closes the lockers and connections opened for `{ env }` locks. A call made while an earlier one
 * runs (a shutdown hook beside the app's own) resolves once that one is done too: its caller may
 * exit then.
 */
export function closeEnvClients(): Promise<void> {
  const clients = [...envClients.values()];
  envClients.clear();
  for (const client of clients) {
    // A strict Lock made before holds the client itself: its calls would fail as if Redis were down.
    if (!closedClients.has(client)) closedClients.set(client, new LockerClosedError());
  }
  const closed = Promise.all(
    clients.map(async (client) => {
      // Side by side: against a frozen server each close waits out its command timeout.
      await Promise.all([...(lockers.get(client)?.values() ?? [])].map((locker) => locker.close()));
      lockers.delete(client);
      // QUIT lets what is queued finish; a frozen server never answers it, so it is bounded.
      await bounded(client.quit(), DEFAULT_COMMAND_TIMEOUT, 'env connection', 'disconnect').catch(() => {});
      client.disconnect();
    }),
  );
  const earlier = closing;
  closing = Promise.allSettled([earlier, closed]).then(() => {});
  return Promise.all([earlier, closed]).then(() => {});
}
