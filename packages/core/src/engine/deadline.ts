import { LockError, LockUnavailableError } from '../errors.js';
import { detached } from './detached.js';

/** The longest delay a Node timer takes. */
const MAX_TIMER = 2 ** 31 - 1;

/** The reason a call that Redis did not answer in time gives up with. */
export class CommandTimeoutError extends Error {
  override name = 'CommandTimeoutError';
  constructor(readonly timeout: number) {
    super(`Redis did not answer within ${timeout} ms`);
  }
}

/**
 * A call `withDeadline` bounds, due at `at` (performance.now() ms). Entries are linked into one
 * list rather than kept in a Set: a Set that one call joins and leaves per round trip spends
 * more on its table than the call spends on everything else in this file.
 */
class Pending {
  prev: Pending | undefined;
  next: Pending | undefined;
  linked = false;
  settled = false;
  givenUp = false;
  /** Removes the listener on the caller's signal, when one was given. */
  unlisten: (() => void) | undefined;

  constructor(
    readonly at: number,
    readonly timeout: number,
    readonly reject: (reason: unknown) => void,
    readonly abandoned: (() => void) | undefined,
  ) {}

  /**
   * Timers run before I/O in each turn of the event loop: after a stall of our own process the
   * timer would fire while the answer already waits to be read. The verdict waits for the check
   * phase, after pending I/O, so only a call Redis really has not answered times out.
   */
  expire(): void {
    setImmediate(giveUp, this);
  }
}

function giveUp(entry: Pending, reason: unknown = new CommandTimeoutError(entry.timeout)): void {
  if (entry.settled || entry.givenUp) return;
  entry.givenUp = true;
  deadlines.delete(entry);
  entry.unlisten?.();
  entry.reject(reason);
  entry.abandoned?.();
}

/**
 * Every pending deadline of the process behind one timer, armed for the earliest of them. A
 * timer per call would be created and cleared on every round trip; here a call only joins and
 * leaves a list. The timer keeps the process alive only while some call is pending.
 */
class Deadlines {
  private head: Pending | undefined;
  private size = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private readonly fire = () => this.sweep();

  add(entry: Pending): void {
    entry.next = this.head;
    if (this.head) this.head.prev = entry;
    this.head = entry;
    entry.linked = true;
    this.size += 1;
    if (this.size === 1) this.timer?.ref();
    if (entry.at < this.timerAt) this.arm(entry.at);
  }

  delete(entry: Pending): void {
    if (!entry.linked) return;
    entry.linked = false;
    if (entry.prev) entry.prev.next = entry.next;
    else this.head = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    entry.prev = undefined;
    entry.next = undefined;
    this.size -= 1;
    if (this.size === 0) this.timer?.unref();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    // The process's one timer, re-armed from its own callback: armed in a call's context, it would
    // hold that context (a request's, with its spans) alive for as long as calls keep it armed.
    // Node fires a longer timer at once (TimeoutOverflowWarning): a far deadline is re-armed instead.
    const delay = Math.min(MAX_TIMER, Math.max(0, at - performance.now()));
    this.timer = detached(() => setTimeout(this.fire, delay));
    if (this.size === 0) this.timer.unref();
  }

  private sweep(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    let entry = this.head;
    while (entry) {
      const following = entry.next;
      if (entry.at <= now) {
        this.delete(entry);
        entry.expire();
      } else if (entry.at < next) next = entry.at;
      entry = following;
    }
    if (next < Number.POSITIVE_INFINITY) this.arm(next);
  }
}

const deadlines = new Deadlines();

/**
 * Settles with `call`, or rejects with `CommandTimeoutError` after `timeout` ms, whatever the
 * connection does (ioredis may hold a command in its offline queue for a minute), or with the
 * reason of `signal` as soon as it aborts. A call given up on keeps running: `abandoned` is told
 * when that happens, and `late` how it ended, so a write that lands afterwards can be undone.
 */
export function withDeadline<T>(
  call: Promise<T>,
  timeout: number,
  late?: (settled: PromiseSettledResult<T>) => void,
  abandoned?: () => void,
  signal?: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const entry = new Pending(performance.now() + timeout, timeout, reject, abandoned);
    if (signal?.aborted) {
      giveUp(entry, signal.reason);
    } else {
      deadlines.add(entry);
      if (signal) listen(entry, signal);
    }
    call.then(
      (value) => {
        if (answered(entry)) resolve(value);
        else late?.({ status: 'fulfilled', value });
      },
      (reason: unknown) => {
        if (answered(entry)) reject(reason);
        else late?.({ status: 'rejected', reason });
      },
    );
  });
}

function listen(entry: Pending, signal: AbortSignal): void {
  const aborted = () => giveUp(entry, signal.reason);
  signal.addEventListener('abort', aborted, { once: true });
  entry.unlisten = () => signal.removeEventListener('abort', aborted);
}

/** Marks the call answered; whether its caller still waits for it (neither the deadline nor the signal gave up on it). */
function answered(entry: Pending): boolean {
  entry.settled = true;
  if (entry.givenUp) return false;
  deadlines.delete(entry);
  entry.unlisten?.();
  return true;
}

/**
 * Error replies that say the server cannot serve now, not that the command was wrong: a refused
 * login (the connection is unusable whatever the command), a demoted master or a replica cut off
 * from its master, a server loading its data or busy running a script, a cluster reconfiguring,
 * memory full under `noeviction`, writes stopped after a failed save. A waiting acquire tries
 * again (a failover is over within its wait), and callers see `LockUnavailableError`.
 */
const SERVER_UNAVAILABLE =
  /^(WRONGPASS|NOAUTH|READONLY|MASTERDOWN|LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|OOM|MISCONF) /;

/**
 * Whether an error means Redis could not be reached, did not answer or cannot serve now (a
 * refused or closed connection, ioredis giving up, our own deadline, `SERVER_UNAVAILABLE`), as
 * opposed to an answer: Redis's other error replies (NOPERM, WRONGTYPE, …) and the library's
 * typed errors pass through unchanged.
 */
export function isUnreachable(error: unknown): boolean {
  if (error instanceof LockUnavailableError || error instanceof CommandTimeoutError) return true;
  if (error instanceof LockError) return false;
  if (!(error instanceof Error) || error.name !== 'ReplyError') return true;
  return SERVER_UNAVAILABLE.test(error.message);
}

/**
 * Strips the arguments ioredis attaches to a failed command (`error.command.args`): they hold
 * owner tokens (which release and extend a lock) and, for a refused login, the password.
 */
export function redacted<E>(error: E): E {
  const command = (error as { command?: { name?: unknown; args?: unknown } } | null)?.command;
  if (command && typeof command === 'object' && 'args' in command) {
    (error as { command: unknown }).command = { name: command.name };
  }
  return error;
}

/** The error a call that could not reach Redis rejects with: `LockUnavailableError`, the failure as `cause`. */
export function unavailable(error: unknown, key: string, operation: string): unknown {
  redacted(error);
  if (error instanceof LockUnavailableError || !isUnreachable(error)) return error;
  return new LockUnavailableError(key, operation, { cause: error });
}

/**
 * The `cause` of a `LockUnavailableError` (a `QuorumError` for RedLock) for a grant or renewal
 * Redis answered only after its validity had ended, `elapsed` ms after it was sent: the lock was
 * there to take, but Redis or the network was too slow for the ttl, which neither a refusal (a
 * busy lock) nor a silent server would tell the caller.
 */
export function pastValidity(what: 'granted' | 'renewed', elapsed: number, validity: number): ErrorOptions {
  return { cause: new Error(`${what} ${Math.round(elapsed)} ms in, past the validity of ${validity} ms`) };
}

/**
 * `call` bounded by `timeout` ms, failing to reach Redis turned into `LockUnavailableError`
 * (naming `key` and `operation`). For packages that send commands of their own beside the
 * engine; the engine's own round trips also name the connection's last error (`unavailableOn`),
 * which needs a backend.
 */
export async function bounded<T>(
  call: Promise<T>,
  timeout: number,
  key: string,
  operation: string,
): Promise<T> {
  try {
    return await withDeadline(call, timeout);
  } catch (error) {
    throw unavailable(error, key, operation);
  }
}
