/** The links made from one input signal, served by a single `abort` listener on it. */
interface Followers {
  readonly aborts: Set<() => void>;
  readonly listener: () => void;
}

const following = new WeakMap<AbortSignal, Followers>();

/**
 * Calls `abort` when `signal` aborts, until the answer is called. However many calls share one
 * signal (a request's, given to each of its locks), it carries one listener of ours: a listener
 * per call would trip Node's MaxListenersExceededWarning at the eleventh concurrent call.
 */
function follow(signal: AbortSignal, abort: () => void): () => void {
  let followers = following.get(signal);
  if (!followers) {
    const aborts = new Set<() => void>();
    const listener = () => {
      following.delete(signal);
      // A copy: an abort may end another follower's call, whose dispose then leaves the set.
      for (const each of [...aborts]) each();
    };
    followers = { aborts, listener };
    following.set(signal, followers);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { aborts, listener } = followers;
  aborts.add(abort);
  return () => {
    if (!aborts.delete(abort) || aborts.size > 0) return;
    if (following.get(signal) === followers) following.delete(signal);
    signal.removeEventListener('abort', listener);
  };
}

/**
 * A signal that aborts when either `a` or `b` does, unlinked by `dispose()`. Unlike
 * `AbortSignal.any`, nothing of it stays reachable from a long-lived signal once disposed
 * (on Node 20 a long-lived input keeps every composite made from it).
 */
export function linkSignals(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  if (a.aborted) controller.abort(a.reason);
  else if (b.aborted) controller.abort(b.reason);
  if (controller.signal.aborted) return { signal: controller.signal, dispose: () => {} };
  const unfollowA = follow(a, () => controller.abort(a.reason));
  const unfollowB = follow(b, () => controller.abort(b.reason));
  return {
    signal: controller.signal,
    dispose: () => {
      unfollowA();
      unfollowB();
    },
  };
}
