import { currentChain, InvalidOptionError } from '@lock/core';

/** Options of every call made "as a thread". */
export interface ThreadOptions {
  /**
   * Redisson's thread id for this call, as the `threadId` argument of Redisson's async API: a
   * non-negative safe integer; the owner field becomes `<client id>:<threadId>`. Default: the
   * thread of the enclosing `redisson.run(fn)` (any async call chain of `@lock/core`'s); outside
   * one the call is refused with `NoThreadError`.
   */
  readonly threadId?: number;
}

/**
 * A call that acts "as the current thread" made outside any `redisson.run(fn)` and without a
 * `threadId`. Nothing would tie a later `unlock()` to the caller that locked: two concurrent
 * request handlers would be one thread, and one could release the other's hold. Java throws
 * IllegalMonitorStateException for such an unlock; here the call is refused before anything is written.
 */
export class NoThreadError extends InvalidOptionError {
  override name = 'NoThreadError';
  constructor(
    /** The lock's name. */
    readonly lock: string,
    /** The method that was called, e.g. `'lock'`. */
    readonly method: string,
  ) {
    super(
      'threadId',
      undefined,
      `${method}() on "${lock}" to run inside redisson.run(async () => …) or to be given a threadId: ` +
        'outside both, nothing tells this caller from a concurrent one',
    );
  }
}

function checkThreadId(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidOptionError('threadId', value, 'a non-negative safe integer');
  }
  return value;
}

/**
 * The thread a call acts as: its explicit `threadId`, else the async call chain it runs in
 * (`redisson.run` starts one), the same through every await, as a Java thread id is. There is
 * no fallback: a thread made up for an unchained call could not be found again by its unlock.
 */
export function threadOf(lock: string, method: string, explicit: number | undefined): number {
  const thread = checkThreadId(explicit) ?? currentChain();
  if (thread === undefined) throw new NoThreadError(lock, method);
  return thread;
}
