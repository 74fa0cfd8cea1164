import { checkMs, refuseUnknown } from './engine/options.js';
import { ClockSkewError, InvalidOptionError, LockUnavailableError } from './errors.js';
import type { RedisClient } from './protocol.js';

/**
 * What to do about a Redis master whose wall clock is far off this process's. Redis keeps expiry
 * as an absolute time on its own clock: a lease on a master whose clock runs ahead ends early
 * (another owner gets the lock while the holder still believes it holds it), one behind ends late.
 * The clock is read (`TIME`) by the first acquisition on each master, and again after each
 * reconnect (on one deployment with each fence counter's stamp, which that acquisition waits for);
 * a clock that jumps under a live connection is seen only then.
 */
export interface ClockSkewOptions {
  /**
   * How far a master's clock may be off this process's, in ms (a positive integer), beyond the
   * uncertainty of the reading (half its round trip). Default: `1000`.
   */
  readonly margin?: number;
  /**
   * `'warn'`: warn once per server (`process.emitWarning`, code `ERR_LOCK_CLOCK_SKEW`) and grant
   * as usual; the reading is not awaited by RedLock. `'refuse'`: warn as well, and refuse every
   * acquisition on that master while its clock stays off: `ClockSkewError` on one deployment;
   * with RedLock the master does not count toward the majority. A reading whose round trip
   * exceeds the margin proves nothing, and is taken again before a grant; when that one is as
   * slow, the grant is refused with `LockUnavailableError` (with RedLock, that master does not
   * count toward the majority in that attempt). On one deployment a
   * release then hands the lock to no queued waiter directly (that grant would skip the check):
   * it wakes the next one, whose own attempt takes it, one round trip more per hand-off.
   * With a format without a fence counter (whose stamp reads the clock) 'refuse' is refused with
   * `InvalidOptionError`. Default: `'warn'`.
   */
  readonly action?: 'warn' | 'refuse';
}

/** `ClockSkewOptions` with its defaults filled in. */
export type ClockSkewCheck = Required<ClockSkewOptions>;

const ACTIONS: readonly unknown[] = ['warn', 'refuse'];

/** Checks the `clockSkew` option before anything is sent and fills in the defaults. */
export function checkClockSkew(value: unknown): ClockSkewCheck {
  if (value === undefined) return { margin: 1_000, action: 'warn' };
  if (typeof value !== 'object' || value === null) {
    throw new InvalidOptionError(
      'clockSkew',
      value,
      "an object: { margin?: ms, action?: 'warn' | 'refuse' }",
    );
  }
  refuseUnknown(value, ['margin', 'action'], 'the clockSkew options', {}, 'clockSkew');
  const { margin, action } = value as ClockSkewOptions;
  if (action !== undefined && !ACTIONS.includes(action)) {
    throw new InvalidOptionError('clockSkew.action', action, "'warn' or 'refuse'");
  }
  return {
    margin: margin === undefined ? 1_000 : checkMs(margin, 'clockSkew.margin'),
    action: action ?? 'warn',
  };
}

/** A master's clock found off beyond the margin, with 'refuse': grants there are refused with it. */
export interface ClockSkew {
  readonly server: string;
  readonly offset: number;
  readonly margin: number;
}

/**
 * What one `TIME` reply (`sentAt`, `receivedAt`: `Date.now()` around it) says of a master's clock:
 * its offset from this process's clock in ms when that exceeds the margin, counted from the
 * middle of the round trip so that only what exceeds half the round trip counts; `'unsure'` with
 * 'refuse' when the round trip itself exceeds the margin (the reading cannot tell a clock within
 * it from one beyond: it is read again before a grant); else undefined (in step).
 */
export function readClock(
  check: ClockSkewCheck,
  time: readonly (string | number)[],
  sentAt: number,
  receivedAt: number,
): number | 'unsure' | undefined {
  const server = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  const offset = server - (sentAt + receivedAt) / 2;
  if (Math.abs(offset) > check.margin + (receivedAt - sentAt) / 2) return Math.round(offset);
  return check.action === 'refuse' && receivedAt - sentAt > check.margin ? 'unsure' : undefined;
}

/**
 * A master (`server`, `id` its run id where known) found `offset` ms off: warned about once per
 * server, and with 'refuse' the skew its grants are refused with.
 */
export function foundOff(
  check: ClockSkewCheck,
  id: string,
  server: string,
  offset: number,
): ClockSkew | undefined {
  warnClockSkew(id, server, offset, check.margin);
  return check.action === 'refuse' ? { server, offset, margin: check.margin } : undefined;
}

/**
 * The refusal of a checked grant of `key` on a server whose clock was read twice, each reading
 * slower than the margin: it is too slow to be checked, not found off.
 */
export function unsureRefusal(key: string, margin: number): LockUnavailableError {
  const refusal = new LockUnavailableError(key, 'acquire', {
    cause: new Error(`two readings of the server's clock took longer than clockSkew.margin (${margin} ms)`),
  });
  unsureRefusals.add(refusal);
  return refusal;
}

const unsureRefusals = new WeakSet<Error>();

/** Whether `error` is an `unsureRefusal`, a master's own failure being anything else. */
export function isUnsureRefusal(error: unknown): boolean {
  return unsureRefusals.has(error as Error);
}

/** The refusal of a grant of `key` on a master found off. */
export function skewRefusal(key: string, skew: ClockSkew): ClockSkewError {
  return new ClockSkewError(key, skew.server, skew.offset, skew.margin);
}

/**
 * The address a standalone or Sentinel client's socket is connected to, when it is: the server it
 * reached, which a Sentinel client's options do not name; a unix socket's path.
 */
export function socketAddress(redis: RedisClient): string | undefined {
  const { stream, options } = redis as {
    stream?: { remoteAddress?: string; remotePort?: number };
    options?: { path?: string };
  };
  if (stream?.remoteAddress !== undefined) return `${stream.remoteAddress}:${stream.remotePort}`;
  return options?.path || undefined;
}

/** Servers warned about, by run id: once per process however many lockers reach them. */
const warned = new Set<string>();

/** Warns once per server (`id`, its run id where known) that `server`'s clock is `offset` ms off. */
function warnClockSkew(id: string, server: string, offset: number, margin: number): void {
  if (warned.has(id)) return;
  warned.add(id);
  process.emitWarning(
    `the clock of Redis master ${server} is ${offset} ms off this process's (margin ${margin} ms): lock leases on it end early or late by about that much`,
    { code: 'ERR_LOCK_CLOCK_SKEW', type: 'LockWarning' },
  );
}

let warnedUnchecked = false;

/**
 * Said once per process when a master answers `TIME` with an error (an ACL that denies it, a
 * `rename-command`, a proxy without it): its clock is not checked on that connection, and an
 * acquisition there goes on as if it were in step.
 */
export function warnClockUnchecked(server: string, error: Error): void {
  if (warnedUnchecked) return;
  warnedUnchecked = true;
  process.emitWarning(
    `the clock of Redis master ${server} cannot be checked (TIME answered ${error.message}): locks on it are granted without the clockSkew check`,
    { code: 'ERR_LOCK_CLOCK_UNCHECKED', type: 'LockWarning' },
  );
}
