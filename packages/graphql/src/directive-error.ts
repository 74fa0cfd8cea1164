import { LockError } from '@lock/core';

/**
 * A `@locked` directive the transformer cannot apply (a template naming no argument, a bad
 * `ttl`, a subscription field, …), thrown when the schema is transformed, naming the field.
 */
export class LockedDirectiveError extends LockError {
  override name = 'LockedDirectiveError';
  constructor(
    /** The field, as `Type.field`. */
    readonly coordinate: string,
    message: string,
  ) {
    super('ERR_LOCK_INVALID_DIRECTIVE', `${coordinate}: ${message}`);
  }
}
