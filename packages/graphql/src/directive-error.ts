import { LockError } from '@lock/core';

/**
 * A `@locked` directive the transformer cannot apply (a template naming no argument, a bad
 * `ttl`, a subscription field, a type or the schema instead of a field, …), thrown when the
 * schema is transformed, naming where the directive is.
 */
export class LockedDirectiveError extends LockError {
  override name = 'LockedDirectiveError';
  constructor(
    /**
     * Where the directive is: `Type.field`, or `Type`, `Type.field(arg:)`, `Input.field`,
     * `Enum.VALUE`, `schema` (the schema definition).
     */
    readonly coordinate: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super('ERR_LOCK_INVALID_DIRECTIVE', `${coordinate}: ${message}`, options);
  }
}
