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

/**
 * Counts pending timers once the destroy hooks of those just cleared have run: Node runs them
 * asynchronously, so a timer cleared in the same turn (a call's own deadline) would still count.
 */
async function settledCount(): Promise<number> {
  await new Promise((resolve) => setImmediate(resolve));
  return pending.size;
}

/** Runs `fn` while timers are tracked (async hooks cost time, so only around what needs them). */
export async function trackingTimers<T>(
  fn: (pendingTimers: () => Promise<number>) => Promise<T>,
): Promise<T> {
  hook.enable();
  try {
    return await fn(settledCount);
  } finally {
    hook.disable();
    pending.clear();
  }
}
