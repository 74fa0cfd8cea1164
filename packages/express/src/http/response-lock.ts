import type { AcquireOptions, Lock, Locker } from '@lock/core';

/** The part of a Node `ServerResponse` (Express `res`, Koa `ctx.res`) the lock follows. */
export interface ClosableResponse {
  /** True once 'close' was emitted. */
  readonly closed: boolean;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/**
 * Holds `key` for the lifetime of `res`: `proceed(lock)` runs inside the lock's critical
 * section (so the handler re-enters it with `locker.using(key, …)`), and the lock is released
 * exactly once, when `res` emits 'close'. That event follows a normal finish and a client
 * abort, also mid-stream, so neither a streamed body still being written nor a vanished client
 * keeps the lock. Resolves with true once `proceed` was called, false when the response closed
 * first (the wait was aborted; nothing is left in Redis); rejects with the acquire's error.
 * `ended` gets what went wrong after `proceed`: a failed release, or the lock lost meanwhile.
 */
export function lockForResponse(
  res: ClosableResponse,
  locker: Locker,
  key: string,
  options: Pick<AcquireOptions, 'ttl' | 'wait' | 'renew'>,
  proceed: (lock: Lock) => void,
  ended: (error: unknown) => void,
): Promise<boolean> {
  if (res.closed) return Promise.resolve(false);
  const gone = new AbortController();
  let over!: () => void;
  const responseOver = new Promise<void>((resolve) => {
    over = resolve;
  });
  let holding = false;
  // While waiting, any 'close' ends the wait: after a client abort nobody reads the answer, and
  // after a finish (another middleware answered) the handler will not run either.
  const closed = () =>
    holding ? over() : gone.abort(new Error('the response closed before its lock was acquired'));
  res.once('close', closed);
  return new Promise((resolve, reject) => {
    locker
      .using(
        key,
        // Never re-enter a hold that encloses the server itself: every request is its own owner.
        { ...options, signal: gone.signal, reentrant: false },
        async (lock) => {
          // 'close' may have come between the grant and this call.
          if (gone.signal.aborted) return;
          holding = true;
          resolve(true);
          proceed(lock);
          await responseOver;
        },
      )
      .then(
        () => {
          if (!holding) resolve(false);
        },
        (error: unknown) => {
          if (holding) return ended(error);
          res.off('close', closed);
          if (gone.signal.aborted) resolve(false);
          else reject(error);
        },
      );
  });
}
