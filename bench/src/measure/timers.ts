import { createHook } from 'node:async_hooks';

/**
 * Pending timers of this process, unref'd ones included (which `getActiveResourcesInfo()` leaves
 * out): a `setTimeout` lives until it fires or is cleared, a `setInterval` until cleared.
 */
const pending = new Set<number>();
const hook = createHook({
  init(id, type) {
    if (type === 'Timeout') pending.add(id);
  },
  destroy(id) {
    pending.delete(id);
  },
});

/** Runs `fn` while timers are tracked (async hooks cost time, so only around what needs them). */
export async function trackingTimers<T>(fn: (pendingTimers: () => number) => Promise<T>): Promise<T> {
  hook.enable();
  try {
    return await fn(() => pending.size);
  } finally {
    hook.disable();
    pending.clear();
  }
}
