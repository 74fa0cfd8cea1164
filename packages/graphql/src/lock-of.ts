import { InvalidOptionError, type Lock } from '@lock/core';
import type { GraphQLResolveInfo } from 'graphql';
import { LockedDirectiveError } from './directive-error.js';

// By the `info` a locked call hands its resolver: a copy of its own (see `callInfo`).
const locks = new WeakMap<GraphQLResolveInfo, Lock>();

/** Answers `lock` for `info`, a copy made for one call. */
export function attachLock(info: GraphQLResolveInfo, lock: Lock): void {
  locks.set(info, lock);
}

/**
 * The lock held for this call of a `@locked` field: its `fence` for fenced writes, its `signal`
 * (aborted when the lock is lost) to stop work that must not outlive it. Pass the resolver's
 * own `info`; throws `LockedDirectiveError` when the field holds no lock, `InvalidOptionError`
 * when `info` is no resolve info.
 */
export function lockOf(info: GraphQLResolveInfo): Lock {
  if (typeof info?.parentType?.name !== 'string')
    throw new InvalidOptionError('info', info, "the resolver's own info, its fourth argument");
  const lock = locks.get(info);
  if (lock === undefined)
    throw new LockedDirectiveError(
      `${info.parentType.name}.${info.fieldName}`,
      'lockOf(info) found no lock: the field has no @locked directive, or info is not the one its resolver received',
    );
  return lock;
}
