import type { AcquireOptions, Lock, Locker } from '@lock/core';

/**
 * The part of a Node response the lock follows: node:http's `ServerResponse` (Express `res`, Koa
 * `ctx.res`) or node:http2's compatibility `Http2ServerResponse`.
 */
export interface ClosableResponse {
  /** True once 'close' was emitted (node:http; @types/node declares it on node:http2's too, which has none). */
  readonly closed?: boolean;
  /** The HTTP/2 stream of a node:http2 compatibility response: destroyed once the response closed. */
  readonly stream?: { readonly destroyed: boolean };
  /** Null while the response is queued behind a pipelined one on its connection. */
  readonly socket: unknown;
  /** True once the response was ended (`end()` reached Node's own). */
  readonly writableEnded?: boolean;
  end: (...args: never[]) => unknown;
  once(event: 'close' | 'prefinish', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/**
 * Calls `ended` when the app ends `res`: its work is over then. Its 'finish' and 'close' come
 * when the client has taken the last byte (or, for a response queued behind a pipelined one,
 * when the responses before it are done), which the client decides: one that stops reading
 * would hold the lock for as long as it likes. A wrapper of `end` installed before the lock's
 * may end the response later, after work of its own (express-session saves the session first):
 * then the end it makes, node:http's 'prefinish' (the body handed to the socket, not yet read
 * by the client), or else 'close'.
 */
function onAppEnd(res: ClosableResponse, ended: () => void): void {
  const end = res.end;
  res.end = function (this: unknown, ...args: never[]) {
    const result = end.apply(this, args);
    if (res.writableEnded === false) res.once('prefinish', ended);
    else ended();
    return result;
  };
}

/** The connection of a request (`req.socket`): its 'close' is the client going away. */
export interface ClosableConnection {
  /** True once the connection is destroyed (set before 'close' is emitted). */
  readonly destroyed: boolean;
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
}

/**
 * The part of a Node `IncomingMessage` (Express `req`, Koa `ctx.req`) the lock follows: its
 * connection. A pipelined response queued behind another one on the same connection has no
 * socket yet and gets neither 'finish' nor 'close' when the client goes away; only the
 * connection's 'close' says so.
 */
export interface ClosableRequest {
  readonly socket: ClosableConnection | null | undefined;
}

interface ConnectionWatch {
  readonly listeners: Set<() => void>;
  readonly fire: () => void;
}

const watches = new WeakMap<ClosableConnection, ConnectionWatch>();

/**
 * Calls `listener` when `connection` closes; returns what stops watching. A connection gets one
 * 'close' listener however many requests on it wait or hold a lock (pipelined requests do not
 * pile up listeners), and none once none does.
 */
function watchConnection(connection: ClosableConnection, listener: () => void): () => void {
  let watch = watches.get(connection);
  if (watch === undefined) {
    const listeners = new Set<() => void>();
    const fire = () => {
      watches.delete(connection);
      for (const each of [...listeners]) each();
    };
    watch = { listeners, fire };
    watches.set(connection, watch);
    connection.once('close', fire);
  }
  const current = watch;
  current.listeners.add(listener);
  return () => {
    if (!current.listeners.delete(listener) || current.listeners.size > 0) return;
    if (watches.get(connection) !== current) return;
    watches.delete(connection);
    connection.off('close', current.fire);
  };
}

/** A lock a request holds, and what later gates of the request for the same key still run under it. */
interface HeldLock {
  readonly lock: Lock;
  readonly within: Promise<unknown>[];
  /** Set once the hold stopped waiting for `within`: a gate after that takes the lock afresh. */
  over: boolean;
}

/**
 * The locks each request holds, by locker and key: a second gate of one request for a key it
 * holds (a lock on a router and the same lock on its route) runs within that hold, instead of
 * waiting for its own request as a new owner would, and the hold lasts until what that gate
 * runs has settled too.
 */
const requestLocks = new WeakMap<ClosableRequest, Map<Locker, Map<string, HeldLock>>>();

/** Records that `req` holds `held` on `locker`: made on the first lock a request takes, not for every request. */
function recordHeld(req: ClosableRequest, locker: Locker, key: string, held: HeldLock): void {
  let byLocker = requestLocks.get(req);
  if (byLocker === undefined) {
    byLocker = new Map();
    requestLocks.set(req, byLocker);
  }
  let byKey = byLocker.get(locker);
  if (byKey === undefined) {
    byKey = new Map();
    byLocker.set(locker, byKey);
  }
  byKey.set(key, held);
}

/**
 * Holds `key` for the lifetime of `res`: `proceed(lock)` runs inside the lock's critical
 * section (so the handler re-enters it with `locker.using(key, …)`), and the lock is released
 * exactly once, when the response lifetime is over AND the promise `proceed` returned (if any)
 * has settled. The response lifetime is over at the first of `res` 'close' (a normal finish, or
 * a client abort, also mid-stream), the 'close' of `req`'s connection (the client went away
 * while the response was queued behind a pipelined one, which gets no 'close' of its own), and
 * the app ending the response (whose 'close' the client could put off for ever by not reading).
 * Resolves with true once `proceed` was called, false when the lifetime ended first (the wait
 * was aborted; nothing is left in Redis); rejects with the acquire's error. `ended` gets what
 * went wrong after the grant, with the key: a release that failed (tried twice), or the lock
 * lost meanwhile (`LockLostError`, `'taken'` when its release proved the key no longer ours).
 * The listeners it adds are removed once the lifetime is over or the acquire failed: a
 * keep-alive connection serving many requests does not collect them. A request that
 * already holds `key` on `locker` (from an earlier gate) proceeds at once with that lock, which
 * the earlier gate then holds until what this `proceed` returned has settled as well; unless
 * that lock was lost or released meanwhile: this gate then acquires the key as any other request would.
 */
export function lockForResponse(
  res: ClosableResponse,
  req: ClosableRequest | undefined,
  locker: Locker,
  key: string,
  options: Pick<AcquireOptions, 'ttl' | 'wait' | 'renew'>,
  proceed: (lock: Lock) => unknown,
  ended: (error: unknown, key: string) => void,
): Promise<boolean> {
  const connection = req?.socket ?? undefined;
  if (res.closed || res.stream?.destroyed || connection?.destroyed) return Promise.resolve(false);
  const own = req && requestLocks.get(req)?.get(locker)?.get(key);
  // A lock lost since the earlier gate took it (its lease ran out during slow work in between,
  // renewals failed), or released early by the app, is no lock to proceed under: this gate takes
  // the key afresh, as a request holding nothing would.
  if (own && !own.over && own.lock.remaining() > 0) {
    // The gate that took it releases it, once this request is over and this gate's work too.
    own.within.push(Promise.resolve(proceed(own.lock)));
    return Promise.resolve(true);
  }
  const gone = new AbortController();
  let over!: () => void;
  const responseOver = new Promise<void>((resolve) => {
    over = resolve;
  });
  let holding = false;
  let granted: Lock | undefined;
  let listening = true;
  const detach = () => {
    if (!listening) return;
    listening = false;
    res.off('close', closed);
    unwatch?.();
  };
  // While waiting, the end of the lifetime ends the wait: after a client abort nobody reads the
  // answer, and after a finish (another middleware answered) the handler will not run either.
  function closed(): void {
    detach();
    if (holding) over();
    else gone.abort(new Error('the response closed before its lock was acquired'));
  }
  res.once('close', closed);
  onAppEnd(res, () => {
    if (listening) closed();
  });
  const unwatch = connection && watchConnection(connection, closed);
  return new Promise((resolve, reject) => {
    locker
      .using(
        key,
        // Never re-enter a hold that encloses the server itself: every request is its own owner.
        { ...options, signal: gone.signal, reentrant: false },
        async (lock) => {
          granted = lock;
          // The lifetime may have ended between the grant and this call.
          if (gone.signal.aborted) return;
          holding = true;
          const held: HeldLock = { lock, within: [], over: false };
          if (req) recordHeld(req, locker, key, held);
          resolve(true);
          const work = proceed(lock);
          // The adapter's own error handling deals with a rejection of `work` (and of later gates').
          await Promise.allSettled([responseOver, work]);
          while (held.within.length > 0) await Promise.allSettled(held.within.splice(0));
          held.over = true;
        },
      )
      .finally(() => {
        const held = req && requestLocks.get(req)?.get(locker);
        if (held?.get(key)?.over) held.delete(key);
      })
      .then(
        () => {
          detach();
          if (!holding) resolve(false);
          // `using` resolves when its release could not reach Redis (the work is done). Asked
          // again, the handle answers at once with a release that landed, and otherwise tries
          // once more: what still fails leaves the key held until its lease ends, so it is told.
          // A release that proved the key no longer ours made `using` reject (above); a
          // 'not-owner' it let through may be a copy of a release that landed, resent by ioredis
          // after a reconnect, and is no loss to tell.
          granted?.release().catch((error: unknown) => ended(error, key));
        },
        (error: unknown) => {
          detach();
          if (holding) return ended(error, key);
          if (gone.signal.aborted) resolve(false);
          else reject(error);
        },
      );
  });
}
