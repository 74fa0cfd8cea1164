import type { Lock } from '@lock/core';
import { GraphQLError, type GraphQLFieldResolver, type GraphQLResolveInfo } from 'graphql';
import { acquireFailure, LockedErrorCode } from './field-errors.js';
import { attachLock } from './lock-of.js';
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
   * signal), runs the resolver and releases once its result has settled (see `settle`), also
   * when it throws.
   *
   * The resolver runs as the critical section of `locker.using`, so code inside it that locks
   * the same key re-enters the field's lock. Each call is a new owner (the executor calls
   * resolvers outside any critical section), so two fields of one operation with the same key
   * exclude each other.
   *
   * A wrapper of this call nested in another of this call for the same field call and key (a
   * transform wrapped the locked resolver, then this call's transformer locked the field again)
   * runs its resolver without locking: the outer one holds the lock, and a second owner would
   * wait on it. Unless the outer lock was lost meanwhile: it then takes the key afresh.
   */
  wrap(resolve: Resolver, field: LockedField): Resolver;
  /** Whether `resolve` is a wrapper `wrap` made. */
  made(resolve: Resolver | undefined): boolean;
}

/**
 * The field calls running under a lock of one `lockedDirective()` call. By `info.path`: graphql-js
 * builds one per field call, and a wrapper that copies `info` keeps it. With the coordinate and
 * the key: a resolver handing its own `info` to another field's locked resolver, or to its own
 * with other arguments, still takes that lock.
 */
type Running = WeakMap<
  GraphQLResolveInfo['path'],
  { readonly coordinate: string; readonly key: string; readonly lock: Lock }
>;

export function lockedResolvers(settings: Settings): LockedResolvers {
  const made = new WeakSet<Resolver>();
  const running: Running = new WeakMap();
  return {
    wrap(resolve, field) {
      const locked: Resolver = (source, args, context, info) => {
        const outer = running.get(info.path);
        // An outer lock lost meanwhile (slow work of a wrapper in between) is no lock to run under.
        if (
          outer?.coordinate !== field.coordinate ||
          outer.lock.signal.aborted ||
          outer.key !== field.template.build(args, context, info)
        )
          return lockAround(resolve, field, settings, running, [source, args, context, info]);
        // A wrapper in between may have copied `info`: `lockOf` answers for the copy too.
        attachLock(info, outer.lock);
        return resolve(source, args, context, info);
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
      const detach = attachLock(info, held);
      const outer = running.get(info.path);
      running.set(info.path, { coordinate: field.coordinate, key, lock: held });
      try {
        result = { value: await settle(await resolve(source, args, context, info), field, info) };
      } finally {
        // The call that handed this one its `info`, if any, is still running.
        if (outer) running.set(info.path, outer);
        else running.delete(info.path);
        detach();
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
