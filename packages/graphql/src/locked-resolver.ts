import type { Lock } from '@lock/core';
import { GraphQLError, type GraphQLFieldResolver, type GraphQLResolveInfo } from 'graphql';
import { callInfo, originOf } from './call-info.js';
import { acquireFailure, LockedErrorCode } from './field-errors.js';
import type { Settings } from './options.js';
import { type ResultShape, settle } from './settle.js';
import type { KeyTemplate } from './template.js';

/** What the transformer learnt about one `@locked` field. */
export interface LockedField extends ResultShape {
  /** `Type.field`. */
  readonly coordinate: string;
  readonly template: KeyTemplate;
  readonly ttl: number | undefined;
  readonly wait: number | undefined;
}

type Resolver = GraphQLFieldResolver<unknown, unknown>;

/** One `lockedDirective()` call's locked resolvers. */
export interface LockedResolvers {
  /**
   * Wraps a resolver: builds the key, acquires (waiting up to `wait`, stopped by the request's
   * signal), runs the resolver (with a copy of `info` of the call's own, see `callInfo`) and
   * releases once its result has settled (see `settle`), also when it throws.
   *
   * The resolver runs as the critical section of `locker.using`, so code inside it that locks
   * the same key re-enters the field's lock. Each call is a new owner (the executor calls
   * resolvers outside any critical section), so two fields of one operation with the same key
   * exclude each other.
   *
   * A wrapper of this call nested in another of this call for the same field call and key (a
   * transform wrapped the locked resolver, then this call's transformer locked the field again)
   * runs its resolver without locking: the outer one holds the lock, and a second owner would
   * wait on it. Unless the outer lock was lost or released meanwhile: it then takes the key afresh.
   */
  wrap(resolve: Resolver, field: LockedField): Resolver;
  /** Whether `resolve` is a wrapper `wrap` made. */
  made(resolve: Resolver | undefined): boolean;
}

type Path = GraphQLResolveInfo['path'];

/** A field call running under a lock. */
interface Call {
  readonly coordinate: string;
  readonly key: string;
  readonly lock: Lock;
}

/**
 * The field calls running under a lock of one `lockedDirective()` call. By `info.path`: each call
 * hands its resolver one of its own (see `callInfo`), and a wrapper that copies `info` keeps it.
 * With the coordinate and the key: a resolver handing its own `info` to another field's locked
 * resolver, or to its own with other arguments, still takes that lock.
 */
type Running = WeakMap<Path, Call>;

/**
 * The innermost call of `running` that `path` was handed down from. Past the calls of other
 * `lockedDirective()` calls (another directive's lock on the same field): each hands its
 * resolver a `path` of its own.
 */
function enclosing(running: Running, path: Path): Call | undefined {
  for (let at: Path | undefined = path; at !== undefined; at = originOf(at)) {
    const call = running.get(at);
    if (call !== undefined) return call;
  }
  return undefined;
}

export function lockedResolvers(settings: Settings): LockedResolvers {
  const made = new WeakSet<Resolver>();
  const running: Running = new WeakMap();
  return {
    wrap(resolve, field) {
      const locked: Resolver = (source, args, context, info) => {
        const outer = enclosing(running, info.path);
        // An outer lock lost meanwhile (slow work of a wrapper in between), or released by its
        // resolver, is no lock to run under.
        if (
          outer?.coordinate !== field.coordinate ||
          outer.lock.remaining() === 0 ||
          outer.key !== field.template.build(args, context, info)
        )
          return lockAround(resolve, field, settings, running, [source, args, context, info]);
        return resolve(source, args, context, callInfo(info, outer.lock));
      };
      made.add(locked);
      return locked;
    },
    made: (resolve) => resolve !== undefined && made.has(resolve),
  };
}

async function lockAround(
  resolve: Resolver,
  field: LockedField,
  settings: Settings,
  running: Running,
  [source, args, context, info]: Parameters<Resolver>,
): Promise<unknown> {
  const key = field.template.build(args, context, info);
  let lock: Lock | undefined;
  let result: { value: unknown } | undefined;
  try {
    // The resolver's outcome stands when the lock was lost meanwhile: the work is done, and an
    // error would invite a retry of it. Resolvers that must stop watch `lockOf(info).signal`.
    const options = {
      ttl: field.ttl,
      wait: field.wait,
      signal: settings.signal(context),
      rejectOnLoss: false,
    };
    await settings.locker.using(key, options, async (held) => {
      lock = held;
      const own = callInfo(info, held);
      running.set(own.path, { coordinate: field.coordinate, key, lock: held });
      try {
        result = { value: await settle(await resolve(source, args, context, own), field, own) };
      } finally {
        running.delete(own.path);
      }
    });
  } catch (error) {
    if (lock === undefined) {
      const failure = acquireFailure(error, field.coordinate, settings.http);
      if (!(failure instanceof GraphQLError) || failure.extensions.code !== LockedErrorCode.LOCKED)
        throw failure;
      return settings.onLocked(failure, { key, source, args, context, info });
    }
    throw error;
  }
  return result!.value;
}
