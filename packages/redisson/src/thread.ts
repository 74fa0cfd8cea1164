import { currentChain, InvalidOptionError } from '@lock/core';

/** Options of every call made "as a thread". */
export interface ThreadOptions {
  /**
   * Redisson's thread id for this call, as the `threadId` argument of Redisson's async API: a
   * positive integer below 2^52 (ids from 2^52 up are `redisson.run()` threads'); the owner field
   * becomes `<client id>:<threadId>`. Default: the thread of the enclosing `redisson.run(fn)` (any
   * async call chain of `@lock/core`'s); outside one the call is refused with `NoThreadError`.
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

/**
 * Where `redisson.run()` threads start. Core numbers chains 1, 2, 3… process-wide, the very ids
 * a caller picks for `threadId` (job ids, counters): used as they are, `tryLock({ threadId: 1 })`
 * would re-enter the hold of the first `run()` as its own. Explicit ids stay below this and chain
 * n is this + n: one owner field can never be both, and every id is still a Java long (and an
 * exact JS number up to 2^53 - 1, far more chains than a process starts).
 */
export const RUN_THREAD_BASE = 2 ** 52;

/** The thread id of core chain `chain` (a `redisson.run()` call, or any chain of core's). */
export const runThread = (chain: number): number => RUN_THREAD_BASE + chain;

/**
 * A thread id the caller gave. `undefined` is refused too: `isHeldByThread(undefined)` names no
 * thread, and answering it for the current one would tell a caller who lost its id that it holds.
 */
export function checkThreadId(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0 || value >= RUN_THREAD_BASE) {
    throw new InvalidOptionError(
      'threadId',
      value,
      'a positive integer below 2^52: ids from 2^52 up are those of redisson.run() threads, ' +
        'which an explicit id must never re-enter',
    );
  }
  return value;
}

/**
 * The thread a call acts as: its explicit `threadId`, else the async call chain it runs in
 * (`redisson.run` starts one), the same through every await, as a Java thread id is. There is
 * no fallback: a thread made up for an unchained call could not be found again by its unlock.
 */
export function threadOf(lock: string, method: string, explicit: number | undefined): number {
  if (explicit !== undefined) return checkThreadId(explicit);
  const chain = currentChain();
  if (chain === undefined) throw new NoThreadError(lock, method);
  return runThread(chain);
}
