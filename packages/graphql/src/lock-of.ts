import type { Lock } from '@lock/core';
import type { GraphQLResolveInfo } from 'graphql';
import { LockedDirectiveError } from './directive-error.js';

// graphql-js builds one `info` per field call, and hands the wrapper's own object to the resolver.
const locks = new WeakMap<GraphQLResolveInfo, Lock>();

/**
 * Answers `lock` for `info` from now on; the function returned puts back the lock answered
 * before, if any: a resolver that handed its own `info` to another field's locked resolver gets
 * its own lock again once that call is over.
 */
export function attachLock(info: GraphQLResolveInfo, lock: Lock): () => void {
  const before = locks.get(info);
  locks.set(info, lock);
  return () => {
    if (before !== undefined) locks.set(info, before);
  };
}

/**
 * The lock held for this call of a `@locked` field: its `fence` for fenced writes, its `signal`
 * (aborted when the lock is lost) to stop work that must not outlive it. Pass the resolver's
 * own `info`; throws `LockedDirectiveError` when the field holds no lock.
 */
export function lockOf(info: GraphQLResolveInfo): Lock {
  const lock = locks.get(info);
  if (lock === undefined)
    throw new LockedDirectiveError(
      `${info.parentType.name}.${info.fieldName}`,
      'lockOf(info) found no lock: the field has no @locked directive, or info is not the one its resolver received',
    );
  return lock;
}
