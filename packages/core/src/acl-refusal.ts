/**
 * Refused by an ACL: as a command (`NOPERM`), or inside a script, where Redis 7.0 answers `ERR The
 * user executing the script can't run this command` and 7.2 on `ERR ACL failure in script`.
 */
export function isPermissionError(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.message.startsWith('NOPERM') ||
      error.message.includes('user executing the script can') ||
      error.message.startsWith('ERR ACL failure in script'))
  );
}

let warnedLeaveRefused = false;

/**
 * Said once per process when the ACL refuses the script by which a waiter that gives up leaves the
 * server's queue: the call itself ends as it would anyway, but until its registration lapses the
 * release keeps naming (or handing the lock to) an owner nobody waits for, and the waiters behind
 * it wait for their next poll. Any other failure of that step is the outage the call already
 * reported, and stays silent.
 */
export function warnIfLeaveRefused(error: unknown): void {
  if (warnedLeaveRefused || !isPermissionError(error)) return;
  warnedLeaveRefused = true;
  process.emitWarning(
    `the Redis user may not run the script by which a waiter that gives up leaves the queue (${(error as Error).message}): the waiters behind it wait for their next poll until its registration lapses; grant the commands the README lists`,
    { code: 'ERR_LOCK_LEAVE_REFUSED', type: 'LockWarning' },
  );
}
