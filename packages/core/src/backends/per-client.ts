import type { RedisClient } from '../protocol.js';

/** One use of a value shared on a client (see `perClient`). */
export interface ClientShare<T> {
  readonly value: T;
  /**
   * Gives this use up, once: `'last'` when no use is left (the value is no longer shared: a use
   * taken from now on makes a new one, so its owner may stop it), `'kept'` while others use it,
   * `'again'` for a use already given up.
   */
  release(): 'last' | 'kept' | 'again';
}

/**
 * Shares `make(redis)` among the uses taken on one client: made by the first, no longer shared
 * once the last is given up, made anew by a use after that.
 */
export function perClient<T>(make: (redis: RedisClient) => T): (redis: RedisClient) => ClientShare<T> {
  const entries = new WeakMap<RedisClient, { value: T; users: number }>();
  return (redis) => {
    let entry = entries.get(redis);
    if (!entry) {
      entry = { value: make(redis), users: 0 };
      entries.set(redis, entry);
    }
    entry.users += 1;
    const used = entry;
    let released = false;
    return {
      value: used.value,
      release() {
        if (released) return 'again';
        released = true;
        used.users -= 1;
        if (used.users > 0) return 'kept';
        // Taken off before its owner stops it: a use taken meanwhile makes a new one.
        entries.delete(redis);
        return 'last';
      },
    };
  };
}
