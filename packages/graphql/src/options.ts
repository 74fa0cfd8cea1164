import type { Locker } from '@lock/core';
import type { GraphQLError, GraphQLFieldResolver, GraphQLResolveInfo } from 'graphql';

/**
 * What a `{keys.name}` template segment calls: its answer is written into the key as `String()`
 * writes it. `null`, `undefined` or `''` answers the field with `BAD_USER_INPUT`; anything else
 * that is not a string, finite number, bigint or boolean (an object, a promise, `NaN`) fails it as
 * a server error.
 */
export type KeyFunction = (
  args: Record<string, unknown>,
  context: unknown,
  info: GraphQLResolveInfo,
) => string | number | bigint | boolean | null | undefined;

/** The field call that found its lock busy, as `onLocked` receives it. */
export interface LockedCall {
  /** The lock key the call asked for. */
  readonly key: string;
  readonly source: unknown;
  readonly args: Record<string, unknown>;
  readonly context: unknown;
  readonly info: GraphQLResolveInfo;
}

/** HTTP statuses set through `extensions.http` (applied by Apollo Server 5 and GraphQL Yoga 5). */
export interface HttpStatusOptions {
  /** Status when the lock stays busy (`LOCKED`), sent with `Retry-After`. Default: `409`. */
  readonly locked?: number;
  /** Status when Redis is unreachable (`LOCK_UNAVAILABLE`). Default: `503`. */
  readonly unavailable?: number;
}

/** Options of `lockedDirective`. */
export interface LockedDirectiveOptions {
  /** The locker every `@locked` field acquires from (any protocol, any topology). Required. */
  readonly locker: Locker;
  /** The directive's name in the schema. Default: `'locked'`. */
  readonly name?: string;
  /**
   * Lease in ms for fields whose directive gives no `ttl`; a fixed lease is not renewed.
   * Default: the locker's `ttl` (30 000), renewed while the resolver runs.
   */
  readonly ttl?: number;
  /** How long a field waits for a busy lock, in ms, when its directive gives no `wait`. Default: the locker's `wait` (10 000). */
  readonly wait?: number;
  /**
   * Key functions for what a template cannot say, called by a `{keys.name}` segment with the
   * field's `(args, context, info)`: an object of functions by name (its own enumerable properties), not a list of lock keys
   * (the lock key is the directive's `key`), read when the factory is called. Default: `{}`.
   */
  readonly keys?: Readonly<Record<string, KeyFunction>>;
  /**
   * Called when the lock is still busy after `wait`, with the `LOCKED` error: what it returns
   * becomes the field's value, what it throws becomes the field's error.
   * Default: throws the `LOCKED` error.
   */
  readonly onLocked?: (error: GraphQLError, call: LockedCall) => unknown;
  /**
   * Set the HTTP status (and `Retry-After` when busy) of a response carrying `LOCKED` or
   * `LOCK_UNAVAILABLE`: `true` for 409 and 503, or your own statuses. The status applies to the
   * whole response, also when other fields resolved. Default: `false` (GraphQL's usual 200).
   */
  readonly httpStatus?: boolean | HttpStatusOptions;
  /**
   * The signal that stops a field waiting for its lock (the client went away).
   * Default: `context.request.signal` (GraphQL Yoga), else `context.signal` (put one there for Apollo).
   */
  readonly signal?: (context: unknown) => AbortSignal | undefined;
  /**
   * Resolves, under the lock, a `@locked` field that has no resolver of its own: give here the
   * `fieldResolver` you give to `execute` or to the server, which the directive cannot see (it
   * wraps resolvers when the schema is transformed). Fields with a resolver keep theirs.
   * Default: graphql-js's `defaultFieldResolver`.
   */
  readonly fieldResolver?: GraphQLFieldResolver<unknown, unknown>;
}

/** The options with every default applied. */
export interface Settings {
  readonly locker: Locker;
  readonly name: string;
  readonly ttl: number | undefined;
  readonly wait: number | undefined;
  readonly keys: Readonly<Record<string, KeyFunction>>;
  readonly onLocked: (error: GraphQLError, call: LockedCall) => unknown;
  readonly http: Required<HttpStatusOptions> | undefined;
  readonly signal: (context: unknown) => AbortSignal | undefined;
  readonly fieldResolver: GraphQLFieldResolver<unknown, unknown>;
}
