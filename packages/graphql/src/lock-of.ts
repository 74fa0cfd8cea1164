import { InvalidOptionError, type Lock } from '@lock/core';
import type { GraphQLResolveInfo } from 'graphql';
import { LockedDirectiveError } from './directive-error.js';

// By the `path` of the `info` a locked call hands its resolver: an object of the call's own (see
// `callInfo`), which a copy of that `info` made on the way keeps (`{ ...info, span }` of a
// transform applied before the directive).
const locks = new WeakMap<GraphQLResolveInfo['path'], Lock>();

/** Answers `lock` for `info`, a copy made for one call, and for the copies made of it. */
export function attachLock(info: GraphQLResolveInfo, lock: Lock): void {
  locks.set(info.path, lock);
}

/**
 * The lock held for this call of a `@locked` field: its `fence` for fenced writes, its `signal`
 * (aborted when the lock is lost) to stop work that must not outlive it. Pass the resolver's
 * own `info` (or a copy of it that keeps its `path`); throws `LockedDirectiveError` when the
 * field holds no lock, `InvalidOptionError` when `info` is no resolve info.
 */
export function lockOf(info: GraphQLResolveInfo): Lock {
  if (typeof info?.parentType?.name !== 'string')
    throw new InvalidOptionError('info', info, "the resolver's own info, its fourth argument");
  const lock = locks.get(info.path);
  if (lock === undefined)
    throw new LockedDirectiveError(
      `${info.parentType.name}.${info.fieldName}`,
      'lockOf(info) found no lock: the field has no @locked directive, or info is not the one its resolver received',
    );
  return lock;
}
