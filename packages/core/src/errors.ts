/** Every `code` a core error carries, one per class (`QuorumError` narrows `LockUnavailableError`'s). */
export const LOCK_ERROR_CODES = [
  'ERR_LOCK_BUSY',
  'ERR_LOCK_ACQUIRE_TIMEOUT',
  'ABORT_ERR',
  'ERR_LOCK_LOST',
  'ERR_LOCK_UNAVAILABLE',
  'ERR_LOCK_QUORUM',
  'ERR_LOCK_NOT_OWNER',
  'ERR_LOCK_NOT_REPLICATED',
  'ERR_LOCK_INVALID_OPTION',
  'ERR_LOCK_INVALID_KEY',
  'ERR_LOCK_CLOSED',
  'ERR_LOCK_UNSAFE_SERVER',
  'ERR_LOCK_CLOCK_SKEW',
] as const;

/** The `code` of an error thrown by `@lock/core`. */
export type LockErrorCode = (typeof LOCK_ERROR_CODES)[number];

/**
 * One class per failure a caller handles differently. Every class carries a stable `code`
 * (safer than `instanceof` when two copies of the package are installed) and sets `name`
 * explicitly, so minifiers cannot change it.
 */
export class LockError<Code extends string = string> extends Error {
  override name = 'LockError';
  constructor(
    readonly code: Code,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The lock is held by someone else and the call was not allowed to wait. */
export class LockBusyError extends LockError<'ERR_LOCK_BUSY'> {
  override name = 'LockBusyError';
  constructor(
    readonly key: string,
    /** The holder's remaining time to live in ms, or -1 when Redis could not say. */
    readonly remaining: number,
  ) {
    const left = remaining < 0 ? 'time left unknown' : `${remaining} ms left`;
    super('ERR_LOCK_BUSY', `lock "${key}" is held by another owner (${left})`);
  }
}

/** Options of an `AcquireTimeoutError`. */
export interface AcquireTimeoutOptions extends ErrorOptions {
  /** The bound the call reached. Default: `'wait'`. */
  readonly limit?: 'wait' | 'attempts';
}

/** Waiting for the lock took longer than `wait`, or as many attempts as `retry.attempts` allows. */
export class AcquireTimeoutError extends LockError<'ERR_LOCK_ACQUIRE_TIMEOUT'> {
  override name = 'AcquireTimeoutError';
  /** The bound the call reached: its `wait`, or its `retry.attempts`. */
  readonly limit: 'wait' | 'attempts';
  constructor(
    readonly key: string,
    /** How long the call waited, in ms. */
    readonly waited: number,
    /** How many acquisition attempts were sent. */
    readonly attempts: number,
    /** The holder's remaining time to live at the last attempt, in ms (-1 when unknown). */
    readonly remaining: number,
    /** `cause`: the last `QuorumError` when masters failed to answer while waiting. */
    options?: AcquireTimeoutOptions,
  ) {
    const limit = options?.limit ?? 'wait';
    super(
      'ERR_LOCK_ACQUIRE_TIMEOUT',
      limit === 'wait'
        ? `timed out after ${waited} ms and ${attempts} attempts waiting for lock "${key}"`
        : `gave up on lock "${key}" after ${attempts} attempts (the retry.attempts limit) and ${waited} ms`,
      options,
    );
    this.limit = limit;
  }
}

/**
 * A waiting acquire stopped by its AbortSignal. Named `AbortError` with code `ABORT_ERR`,
 * as Node's own aborts are, so generic abort handling recognises it; `cause` is the signal's reason.
 */
export class LockAbortError extends LockError<'ABORT_ERR'> {
  override name = 'AbortError';
  constructor(
    readonly key: string,
    reason: unknown,
  ) {
    super('ABORT_ERR', `acquiring lock "${key}" was aborted`, { cause: reason });
  }
}

/**
 * Why a held lock stopped being held. `'failover'`: the master it was granted on changed (a
 * failover, a restart, a demotion) and no replica had confirmed the grant.
 */
export type LockLostReason = 'expired' | 'renewal-failed' | 'taken' | 'closed' | 'failover';

/** A lock this owner held is no longer held; the handle's `signal` is aborted with this. */
export class LockLostError extends LockError<'ERR_LOCK_LOST'> {
  override name = 'LockLostError';
  /** From `using`: how the critical section's routine ended (its result or its error). */
  readonly outcome?: PromiseSettledResult<unknown>;
  /**
   * With reason `'expired'`: the lease in force, in ms, also named in the message (a ttl meant in
   * seconds, `ttl: 30`, reads there as the 30 ms lease it was).
   */
  readonly lease?: number;
  constructor(
    readonly key: string,
    readonly reason: LockLostReason,
    options?: ErrorOptions & { outcome?: PromiseSettledResult<unknown>; lease?: number },
  ) {
    const lease = options?.lease;
    const why = lease === undefined ? reason : `${reason}: its lease of ${lease} ms ran out`;
    super('ERR_LOCK_LOST', `lock "${key}" was lost (${why})`, options);
    if (options?.outcome) this.outcome = options.outcome;
    if (lease !== undefined) this.lease = lease;
  }

  /** The same loss, carrying the outcome of the critical section it interrupted. */
  with(outcome: PromiseSettledResult<unknown>): LockLostError {
    // Not by its name: the bundler renames a class whose body names it (`_LockLostError`, which
    // logs would show).
    const Lost = this.constructor as typeof LockLostError;
    return new Lost(this.key, this.reason, { cause: this.cause, outcome, lease: this.lease });
  }
}

/**
 * Redis could not be reached, or did not answer in time: the call gave up by its deadline
 * without knowing whether anyone holds the lock. `cause` is what the call failed with: the
 * client's rejection of the command (ioredis rejects with its own errors, e.g. `enableOfflineQueue`
 * off or `maxRetriesPerRequest` reached, never with the refused connection's) or
 * `CommandTimeoutError`. Why the connection was down, when the client said so, is
 * `connectionError`, also named in the message. Adapters answer 503 (or fail open, by option).
 */
export class LockUnavailableError<
  Code extends 'ERR_LOCK_UNAVAILABLE' | 'ERR_LOCK_QUORUM' = 'ERR_LOCK_UNAVAILABLE' | 'ERR_LOCK_QUORUM',
> extends LockError<Code> {
  override name = 'LockUnavailableError';
  /**
   * The last error of the client's connection (a refused or failed connect, an unknown host, a
   * refused login: `connect ECONNREFUSED 127.0.0.1:6390`, `getaddrinfo ENOTFOUND redis`,
   * `WRONGPASS …`) when the call got no answer while the connection was down; absent otherwise.
   */
  declare readonly connectionError?: Error;
  constructor(
    readonly key: string,
    /** What was being done: `'acquire'`, `'release'`, `'extend'`, `'inspect'`, … */
    readonly operation: string,
    options?: ErrorOptions & { connectionError?: Error },
    /** Subclasses name a more precise failure of the same kind (a quorum of masters unreachable). */
    detail: { code: Code; message: string } = {
      code: 'ERR_LOCK_UNAVAILABLE' as Code,
      message: `Redis is unavailable: could not ${operation} lock "${key}"`,
    },
  ) {
    const connection = options?.connectionError;
    super(
      detail.code,
      connection ? `${detail.message} (last connection error: ${connection.message})` : detail.message,
      options,
    );
    if (connection) this.connectionError = connection;
  }
}

/** RedLock could not get a majority of masters to agree: too few answered, so the masters count as unavailable. */
export class QuorumError extends LockUnavailableError<'ERR_LOCK_QUORUM'> {
  override name = 'QuorumError';
  constructor(
    key: string,
    readonly needed: number,
    readonly agreed: number,
    readonly refused: number,
    readonly failed: number,
    readonly timedOut: number,
    /** `connectionError`: the masters that did not answer while their client was down (see `UnreachableMastersError`). */
    options?: ErrorOptions & { connectionError?: Error },
  ) {
    super(key, 'reach a quorum for', options, {
      code: 'ERR_LOCK_QUORUM',
      message: `lock "${key}" needs ${needed} masters: ${agreed} agreed, ${refused} refused, ${failed} failed, ${timedOut} timed out`,
    });
  }
}

/** Release or extend by someone who does not hold the lock. */
export class NotOwnerError extends LockError<'ERR_LOCK_NOT_OWNER'> {
  override name = 'NotOwnerError';
  /** The owner that tried: a secret (it releases and extends the lock), so neither in the message nor enumerable. */
  declare readonly owner: string;
  constructor(
    readonly key: string,
    owner: string,
  ) {
    super('ERR_LOCK_NOT_OWNER', `lock "${key}" is not held by this owner`);
    Object.defineProperty(this, 'owner', { value: owner, enumerable: false });
  }
}

/** No replica confirmed the acquisition within the WAIT timeout, so the lock was released. */
export class ReplicationError extends LockError<'ERR_LOCK_NOT_REPLICATED'> {
  override name = 'ReplicationError';
  constructor(
    readonly key: string,
    readonly wanted: number,
    readonly confirmed: number,
    options?: ErrorOptions,
  ) {
    super(
      'ERR_LOCK_NOT_REPLICATED',
      `lock "${key}" was confirmed by ${confirmed} of ${wanted} replicas, so it was not acquired`,
      options,
    );
  }
}

/** An option has a value the library cannot use, or a name it does not know; nothing was written. */
export class InvalidOptionError extends LockError<'ERR_LOCK_INVALID_OPTION'> {
  override name = 'InvalidOptionError';
  constructor(
    /** The option as the caller wrote it, a nested one with its path: `'retry.base'`. */
    readonly option: string,
    /**
     * The value refused. `undefined` for an unknown name (see `unknown`): it is not kept, since
     * whatever prints the error (a logger, `console.error`, `JSON.stringify`) would show it.
     */
    readonly value: unknown,
    expected: string,
    message = `invalid option "${option}": ${describe(value)} (expected ${expected})`,
  ) {
    super('ERR_LOCK_INVALID_OPTION', message);
  }

  /**
   * An option nothing reads: a misspelt or misplaced name, `meant` the known one it likely stands
   * for. Its value is neither shown nor kept: a password or a client under a wrong name would be
   * logged, and it says nothing of the mistake.
   */
  static unknown(option: string, expected: string, meant: string | undefined): InvalidOptionError {
    const hint = meant === undefined ? '' : `. Did you mean "${meant}"?`;
    // `this`, not its name: see `LockLostError.with`.
    return new this(option, undefined, expected, `unknown option "${option}" (expected ${expected})${hint}`);
  }
}

/** A lock name the library refuses (empty, too long, or unusable on a cluster); nothing was written. */
export class InvalidKeyError extends LockError<'ERR_LOCK_INVALID_KEY'> {
  override name = 'InvalidKeyError';
  constructor(
    readonly key: unknown,
    /** Why the key is refused, without the key: for messages that must not echo it. */
    readonly reason: string,
  ) {
    super('ERR_LOCK_INVALID_KEY', `invalid lock key ${describe(key)}: ${reason}`);
  }
}

/**
 * The Redis server is set up so that it may lose locks on its own (an eviction policy other than
 * `noeviction`), and the locker was told to refuse such a server (`eviction: 'refuse'`).
 */
export class UnsafeServerError extends LockError<'ERR_LOCK_UNSAFE_SERVER'> {
  override name = 'UnsafeServerError';
  constructor(
    readonly key: string,
    why: string,
  ) {
    super('ERR_LOCK_UNSAFE_SERVER', why);
  }
}

/**
 * A Redis master's clock is further off this process's than `clockSkew.margin`, and the locker
 * was told to refuse such a master (`clockSkew: { action: 'refuse' }`): nothing was written on it.
 * Redis keeps expiry as an absolute time on its own clock, so a lease there ends early or late
 * by about the offset (a clock ahead ends it early: another owner gets the lock while this one
 * still believes it holds it). RedLock does not throw it: such a master counts as failed, and a
 * `QuorumError` for too few masters left has it as `cause`.
 */
export class ClockSkewError extends LockError<'ERR_LOCK_CLOCK_SKEW'> {
  override name = 'ClockSkewError';
  constructor(
    readonly key: string,
    /**
     * The master: its address and run id as far as they are known, `127.0.0.1:6379 (run_id
     * 0f3c9a1e)` on one deployment, `clients[2] (127.0.0.1:6381, run_id 0f3c9a1e)` for RedLock.
     */
    readonly server: string,
    /** The master's clock minus this process's, in ms (positive: the master runs ahead). */
    readonly offset: number,
    /** The `clockSkew.margin` it exceeds, in ms. */
    readonly margin: number,
  ) {
    super(
      'ERR_LOCK_CLOCK_SKEW',
      `lock "${key}" was not acquired on Redis master ${server}: its clock is ${offset} ms off this process's, beyond the ${margin} ms margin, so a lease there would end early or late by about that much`,
    );
  }
}

/** The locker was closed; no further acquisitions are accepted. */
export class LockerClosedError extends LockError<'ERR_LOCK_CLOSED'> {
  override name = 'LockerClosedError';
  constructor() {
    super('ERR_LOCK_CLOSED', 'the locker is closed');
  }
}

/**
 * `error` as the caller sees it: a `LockError` a backend raised naming the Redis resource it was
 * sent (`call.resource`, the key with the locker's prefix) is renamed to the key the caller gave,
 * in `.key` and in its message, keeping its class, code, every other field, cause and stack.
 * Anything else is answered as it is.
 */
export function callerKeyed(
  error: unknown,
  call: { readonly key: string; readonly resource: string },
): unknown {
  const { key, resource } = call;
  if (!(error instanceof LockError) || key === resource || (error as { key?: unknown }).key !== resource) {
    return error;
  }
  // Copied, not constructed again: any class (a custom backend's too) and every field, a secret
  // non-enumerable one included. Still a native error, as `util.types.isNativeError` tells.
  const renamed: LockError = Object.setPrototypeOf(new Error(), Object.getPrototypeOf(error));
  Object.defineProperties(renamed, Object.getOwnPropertyDescriptors(error));
  const message = renamedIn(error.message, resource, key);
  Object.defineProperty(renamed, 'key', { value: key });
  Object.defineProperty(renamed, 'message', { value: message });
  // A cause about the same lock (a RedLock master's `ClockSkewError`) names it as the caller does.
  const cause = Object.getOwnPropertyDescriptor(error, 'cause');
  if (cause) Object.defineProperty(renamed, 'cause', { ...cause, value: callerKeyed(cause.value, call) });
  // Where it was raised, not where it was renamed.
  if (error.stack) renamed.stack = error.stack.replace(error.message, () => message);
  return renamed;
}

/**
 * `message` naming `key` where it named `resource`: as written between quotes, or as `describe`
 * shows a value (clipped past `SHOWN` characters, quotes and backslashes escaped).
 */
function renamedIn(message: string, resource: string, key: string): string {
  for (const [from, to] of [
    [`"${resource}"`, `"${key}"`],
    [describe(resource), describe(key)],
  ] as const) {
    // Functions as replacements: a key may hold `$&` or `$1`.
    if (message.includes(from)) return message.replace(from, () => to);
  }
  return message;
}

/** How much of a bad value a message shows: enough to recognise it, never a wall of text. */
const SHOWN = 80;

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(clip(value));
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  if (typeof value === 'function') return 'a function';
  const kind = instanceKind(value);
  if (kind) return `an instance of ${kind}`;
  try {
    // A class instance inside (a locker, a client) is named, not spelt out: its fields may be
    // internals, some of them secret (a locker's owner prefix).
    const text = JSON.stringify(value, (key, inner: unknown) => {
      const innerKind = key === '' ? undefined : instanceKind(inner);
      return innerKind ? `[${innerKind}]` : inner;
    });
    return text === undefined ? typeof value : clip(text);
  } catch {
    return typeof value;
  }
}

function clip(text: string): string {
  return text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text;
}

/** The class name of an object that is neither a plain object nor an array, else undefined. */
function instanceKind(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const kind = (value as object).constructor?.name;
  return kind && kind !== 'Object' && kind !== 'Array' ? kind : undefined;
}

/** Codes of the failures that say Redis could not serve an acquisition, whoever holds the lock. */
const UNAVAILABLE_CODES: readonly unknown[] = [
  'ERR_LOCK_UNAVAILABLE',
  'ERR_LOCK_QUORUM',
  'ERR_LOCK_NOT_REPLICATED',
];

/**
 * Whether an acquisition failed because Redis could not serve it, not because the lock is busy:
 * unreachable, too slow or unable to serve (`LockUnavailableError`, RedLock's `QuorumError`
 * included), or no replica confirmed the grant in time (`ReplicationError`). What the HTTP
 * adapters answer with 503, the GraphQL directive with `LOCK_UNAVAILABLE` and `@lock/otel` records
 * as `unavailable`. By code as well as by class: two copies of the package may be installed.
 */
export function isUnavailable(error: unknown): error is LockUnavailableError | ReplicationError {
  return (
    error instanceof LockUnavailableError ||
    UNAVAILABLE_CODES.includes((error as { code?: unknown } | null)?.code)
  );
}
