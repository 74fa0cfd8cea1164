import type { Lock } from '@lock/core';
import { GraphQLError, type GraphQLFieldResolver } from 'graphql';
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

/**
 * Wraps a resolver: builds the key, acquires (waiting up to `wait`, stopped by the request's
 * signal), runs the resolver and releases once its result has settled (see `settle`), also when
 * it throws.
 *
 * The resolver runs as the critical section of `locker.using`, so code inside it that locks the
 * same key re-enters the field's lock. Each call is a new owner (the executor calls resolvers
 * outside any critical section), so two fields of one operation with the same key exclude
 * each other.
 */
export function lockedResolver(
  resolve: GraphQLFieldResolver<unknown, unknown>,
  field: LockedField,
  settings: Settings,
): GraphQLFieldResolver<unknown, unknown> {
  return async (source, args, context, info) => {
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
        attachLock(info, held);
        result = { value: await settle(await resolve(source, args, context, info), field, info) };
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
  };
}
