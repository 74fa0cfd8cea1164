import { channel, tracingChannel } from 'node:diagnostics_channel';

/**
 * Events published on `node:diagnostics_channel`, so tracing and metrics cost nothing until
 * someone subscribes. Every message names the key, the owner and the protocol.
 */
export const channels = {
  /** `{ key, owner, protocol, fence, holds, waited, attempts }` after a lock is acquired. */
  acquire: channel('lock:acquire'),
  /** `{ key, owner, protocol, held, result }` after a hold is given up (`held` in ms). */
  release: channel('lock:release'),
  /** `{ key, owner, protocol, validUntil, renewal }` after a lease was reset, by `extend()` or the watchdog. */
  extend: channel('lock:extend'),
  /** `{ key, owner, protocol, reason, error }` when a held lock is lost. */
  lost: channel('lock:lost'),
};

export type LockEventName = keyof typeof channels;

/**
 * The whole of one `acquire` / `tryAcquire` call as a `TracingChannel` (`tracing:lock:acquire:*`),
 * published only while someone subscribes. The context is `{ key, protocol, ttl, wait }`; on
 * `asyncEnd` it carries `result` (the `Lock`, or null from `tryAcquire` when busy) or `error`.
 * A subscriber can `bindStore` on `start` to make its own context (a tracing span) active for
 * everything the call does, Redis commands included.
 */
export const acquireTracing = tracingChannel<object, AcquireTraceContext>('lock:acquire');

/** The context object of `acquireTracing`. */
export interface AcquireTraceContext {
  readonly key: string;
  readonly protocol: string;
  readonly ttl: number;
  readonly wait: number;
}
