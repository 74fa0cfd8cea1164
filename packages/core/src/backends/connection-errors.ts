import type { Redis } from 'ioredis';
import type { LockBackend } from '../backend.js';
import { isUnreachable, redacted, unavailable } from '../engine/deadline.js';
import { LockError, LockUnavailableError } from '../errors.js';
import type { RedisClient } from '../protocol.js';
import { isCluster } from '../topology.js';
import { perClient } from './per-client.js';

/** What is listened to on one client, for as long as a backend on it is open. */
interface Watched {
  /** The connection's last error, as `sanitised` kept it, until it is ready again. */
  error: Error | undefined;
  /** Its connections that closed since it was first watched (see `Connection.closes`). */
  closes: number;
  stop(): void;
}

const watchedOn = perClient(watch);

/** How a backend reads its client's connection: `release` when it is closed (or refused). */
export interface Connection {
  readonly error: Error | undefined;
  /**
   * How many of the client's connections closed while it was watched: a standalone or Sentinel
   * client's one, each node's of a cluster. A command answered while this did not move since it
   * was sent ran once: ioredis sends a command again only after the connection it was written on
   * closed (`autoResendUnfulfilledCommands`; a cluster's retry of a command its node's closing
   * failed), and counts that close (on the next tick) before a copy sent on another connection
   * can be answered. A redirect (MOVED, ASK, TRYAGAIN) answers a command its node did not run.
   */
  readonly closes: number;
  release(): void;
}

/**
 * The connection state of `redis`, listened to once per client whatever the number of backends
 * on it, until the last one releases it: a closed or refused locker leaves the client's
 * listeners as they were. ioredis keeps commands in its offline queue while it reconnects and
 * never rejects them with the connection's error (a refused connect, an unknown host, a refused
 * login), so a call that gives up by its deadline could only say that Redis did not answer.
 * `error` is the last one only while the client is not ready: ioredis also reports errors that
 * leave the connection up (a cluster's failed subscriber, a failed MONITOR), which say nothing
 * of a later silence.
 */
export function connectionOf(redis: RedisClient): Connection {
  const use = watchedOn(redis);
  const state = use.value;
  return {
    get error() {
      return redis.status === 'ready' ? undefined : state.error;
    },
    get closes() {
      return state.closes;
    },
    release() {
      if (use.release() === 'last') state.stop();
    },
  };
}

function watch(redis: RedisClient): Watched {
  const state: Watched = { error: undefined, closes: 0, stop: () => {} };
  // First: ioredis prints an error nobody listens to, and listening here must not silence that
  // for the owner of a client who does not listen. Run after the owner's listeners, this would
  // miss one that removed itself as it ran (`events.once`, awaiting 'ready').
  const failed = (error: unknown) => {
    if (!(error instanceof Error)) return;
    state.error = sanitised(error);
    if (redis.listenerCount('error') === 1) console.error('[ioredis] Unhandled error event:', error.stack);
  };
  const ready = () => {
    state.error = undefined;
  };
  redis.prependListener('error', failed);
  redis.on('ready', ready);
  const stopCounting = countCloses(redis, () => {
    state.closes += 1;
  });
  state.stop = () => {
    redis.off('error', failed);
    redis.off('ready', ready);
    stopCounting();
  };
  return state;
}

/**
 * Calls `closed` whenever a connection of `redis` closes: the client's own, or a cluster node's
 * (each node from its `+node` until its `end`, after which the cluster never uses it again; a
 * node dropped from the pool may close after its `-node`). Answers what stops it.
 */
function countCloses(redis: RedisClient, closed: () => void): () => void {
  if (!isCluster(redis)) {
    redis.on('close', closed);
    return () => redis.off('close', closed);
  }
  // Each node's listener of its `end`, which stops counting its closes.
  const nodes = new Map<Redis, () => void>();
  const forget = (node: Redis) => {
    const ended = nodes.get(node);
    if (!ended) return;
    node.off('close', closed);
    node.off('end', ended);
    nodes.delete(node);
  };
  const added = (node: Redis) => {
    if (nodes.has(node)) return;
    const ended = () => forget(node);
    nodes.set(node, ended);
    node.on('close', closed);
    node.once('end', ended);
  };
  for (const node of redis.nodes('all')) added(node);
  redis.on('+node', added);
  return () => {
    redis.off('+node', added);
    for (const node of [...nodes.keys()]) forget(node);
  };
}

/** What a connection error says of the failure: never what was sent (a refused login's AUTH, password included). */
const FACTS = ['code', 'errno', 'syscall', 'address', 'port', 'hostname'] as const;
/** Errors a connection error holds: ioredis's `ClusterAllFailedError.lastNodeError`, a `cause`. */
const NESTED = ['lastNodeError', 'cause'] as const;
/** How deep nested errors are kept: a cycle of causes ends there. */
const DEPTH = 4;

/**
 * A copy of `error` holding only its class, message, stack and `FACTS`, and copies as sanitised
 * of the errors it holds (`NESTED`, an `AggregateError`'s `errors`). ioredis attaches the command
 * to a reply, and a cluster's summary holds its last node's reply: redacting the error in place
 * would miss the nested ones, and would change the client's own error under its other listeners.
 */
function sanitised(error: Error, depth = 0): Error {
  const copy: Error = Object.setPrototypeOf(new Error(error.message), Object.getPrototypeOf(error));
  const given = error as unknown as Record<string, unknown>;
  const keep = (name: string, value: unknown) => {
    const { enumerable = false } = Object.getOwnPropertyDescriptor(error, name) ?? {};
    Object.defineProperty(copy, name, { value, enumerable, writable: true, configurable: true });
  };
  keep('stack', error.stack);
  for (const name of ['name', ...FACTS]) {
    if (Object.hasOwn(error, name)) keep(name, given[name]);
  }
  if (depth >= DEPTH) return copy;
  for (const name of NESTED) {
    const nested = given[name];
    if (nested instanceof Error) keep(name, sanitised(nested, depth + 1));
  }
  const { errors } = given;
  if (Array.isArray(errors)) {
    keep(
      'errors',
      errors.filter((each) => each instanceof Error).map((each) => sanitised(each, depth + 1)),
    );
  }
  return copy;
}

/**
 * `unavailable()` for a call to `backend`: a failure without an answer from Redis (the locker's
 * deadline, the client's own rejection) while the backend's connection was down names the
 * connection's last error too. Its `cause` stays the failure: what ended the call.
 */
export function unavailableOn(
  backend: LockBackend,
  failure: unknown,
  key: string,
  operation: string,
): unknown {
  const { connectionError } = backend;
  if (connectionError === undefined || !unanswered(failure)) return unavailable(failure, key, operation);
  return new LockUnavailableError(key, operation, { cause: redacted(failure), connectionError });
}

/** Whether Redis could not be reached at all: an error reply is an answer, a `LockError` the library's own verdict. */
function unanswered(failure: unknown): boolean {
  return (
    !(failure instanceof LockError) &&
    isUnreachable(failure) &&
    !(failure instanceof Error && failure.name === 'ReplyError')
  );
}
