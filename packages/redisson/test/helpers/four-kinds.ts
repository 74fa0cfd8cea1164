import { waitFor } from '@lock/testing';
import { expect } from 'vitest';
import type { Redisson } from '../../src/index.js';

/** Polling effectively off: within a test only an unlock message can wake a waiter. */
export const NO_POLLING = { base: 60_000, max: 60_000, jitter: 0 };
/**
 * Shorter than one poll: a waiter still waiting by then was never woken. Longer than a failover
 * whose first election failed plus a renewal period (sentinel-master-killed.test.ts).
 */
const WAIT = 40_000;
/** How long the woken waiters may take to take the locks: a few round trips, far below `WAIT`. */
const WOKEN_WITHIN = 5_000;

/** The exclusive kinds under `names`, in order: an RLock, a fair lock, a write lock and a fenced lock. */
export function fourKinds(redisson: Redisson, names: readonly string[]) {
  return [
    redisson.getLock(names[0]!),
    redisson.getFairLock(names[1]!),
    redisson.getReadWriteLock(names[2]!).writeLock(),
    redisson.getFencedLock(names[3]!),
  ];
}

/**
 * Waiting calls of thread 1 on each lock, for `WAIT`: what each answered once it has, or the
 * error it rejected with (then named by the failed expectation).
 */
export function waitOn(locks: ReturnType<typeof fourKinds>): unknown[] {
  const answers: unknown[] = locks.map(() => undefined);
  locks.forEach((lock, i) => {
    lock.tryLock({ wait: WAIT, threadId: 1 }).then(
      (answer) => {
        answers[i] = answer;
      },
      (error: unknown) => {
        answers[i] = String(error);
      },
    );
  });
  return answers;
}

/**
 * Each held lock is freed by `free` (thread 1's unlock, by default); each waiter must take its
 * lock well before a poll could have woken it (the unlock message did), the fenced one with a
 * token above `fence`.
 */
export async function expectHandedOver(
  held: ReturnType<typeof fourKinds>,
  waiter: Redisson,
  waiting: ReturnType<typeof fourKinds>,
  names: readonly string[],
  answers: readonly unknown[],
  fence: number | null,
  free: (lock: ReturnType<typeof fourKinds>[number]) => Promise<unknown> = (lock) =>
    lock.unlock({ threadId: 1 }),
): Promise<void> {
  for (const lock of held) await free(lock);
  await waitFor('the woken waiters to answer', async () => answers.every((answer) => answer !== undefined), {
    timeout: WOKEN_WITHIN,
  }).catch(() => {});
  expect(Object.fromEntries(names.map((name, i) => [name, answers[i]]))).toEqual(
    Object.fromEntries(names.map((name) => [name, true])),
  );
  expect(await waiter.getFencedLock(names[3]!).getToken()).toBeGreaterThan(fence!);
  // By the objects that took them: a lock object keeps its own handles.
  for (const lock of waiting) await lock.unlock({ threadId: 1 });
}
