import { currentChain, InvalidOptionError, newChain } from '@lock/core';

/** Options of every call made "as a thread". */
export interface ThreadOptions {
  /**
   * Redisson's thread id for this call, as the `threadId` argument of Redisson's async API: a
   * non-negative safe integer; the owner field becomes `<client id>:<threadId>`. Default: the
   * current async call chain (see `Redisson.run`); outside any chain, see the README's "Threads".
   */
  readonly threadId?: number;
}

export function checkThreadId(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidOptionError('threadId', value, 'a non-negative safe integer');
  }
  return value;
}

/**
 * Which "thread" a call acts as. Inside an async call chain it is the chain's id, the same
 * through every await, as a Java thread id is. Outside any chain nothing ties two calls
 * together, so every acquisition gets a thread of its own (a new chain id, never shared, so two
 * concurrent callers can never re-enter each other's lock) and is remembered per lock; later
 * unchained calls (unlock, isHeldByCurrentThread, getHoldCount) act as the most recent such
 * thread still holding that lock, which makes `await lock.lock(); …; await lock.unlock()` work.
 */
export class Threads {
  private readonly unchained = new Map<string, number[]>();

  /** The thread an acquisition runs as, and whether it is a new unchained one to `adopt` once it holds the lock. */
  forAcquire(explicit: number | undefined): { thread: number; unchained: boolean } {
    const given = checkThreadId(explicit) ?? currentChain();
    return given === undefined
      ? { thread: newChain(), unchained: true }
      : { thread: given, unchained: false };
  }

  /** Remembers an unchained thread that now holds `lock`. */
  adopt(lock: string, thread: number): void {
    const threads = this.unchained.get(lock) ?? [];
    threads.push(thread);
    this.unchained.set(lock, threads);
  }

  /** The thread any other call on `lock` acts as. */
  current(lock: string, explicit: number | undefined): number {
    return checkThreadId(explicit) ?? currentChain() ?? this.unchained.get(lock)?.at(-1) ?? newChain();
  }

  /** Forgets an unchained thread once it holds nothing of `lock` any more. */
  release(lock: string, thread: number): void {
    const threads = this.unchained.get(lock);
    if (!threads) return;
    const at = threads.lastIndexOf(thread);
    if (at >= 0) threads.splice(at, 1);
    if (threads.length === 0) this.unchained.delete(lock);
  }
}
