import { AsyncResource } from 'node:async_hooks';

/**
 * Made when this module loads, outside any caller's async context (AsyncLocalStorage, and so a
 * tracer's active span): a connection or timer made inside a call would keep that call's context
 * for as long as it lives, and its later commands would be traced in a request that ended long ago.
 */
const root = new AsyncResource('LockBackground');

/** Runs `fn` in the async context of the process, not the caller's: for what outlives the call. */
export function detached<T>(fn: () => T): T {
  return root.runInAsyncScope(fn);
}
