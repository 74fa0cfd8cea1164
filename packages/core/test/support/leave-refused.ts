import { AcquireTimeoutError, type Locker } from '@lock/core';
import { expect } from 'vitest';

/**
 * Gives up twice on `key`, held by another owner, through `locker` (whose user the ACL refuses
 * the script that leaves the queue), and answers the `ERR_LOCK_LEAVE_REFUSED` warnings the
 * process was given: waited for up to 5 s after the first give-up, then one more turn for a second.
 */
export async function leaveRefusedWarnings(locker: Locker, key: string): Promise<Error[]> {
  const warnings: Error[] = [];
  let told: () => void = () => {};
  const warned = new Promise<void>((resolve) => {
    told = resolve;
  });
  const listener = (warning: Error) => {
    if ((warning as NodeJS.ErrnoException).code !== 'ERR_LOCK_LEAVE_REFUSED') return;
    warnings.push(warning);
    told();
  };
  process.on('warning', listener);
  let timer: NodeJS.Timeout | undefined;
  try {
    for (let giveUp = 0; giveUp < 2; giveUp++) {
      const error = await locker.acquire(key, { wait: 300 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AcquireTimeoutError);
    }
    await Promise.race([
      warned,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('no ERR_LOCK_LEAVE_REFUSED warning')), 5_000);
      }),
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    return warnings;
  } finally {
    clearTimeout(timer);
    process.off('warning', listener);
  }
}
