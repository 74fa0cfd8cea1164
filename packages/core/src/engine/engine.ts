import { randomBytes, randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { type InspectOptions, inspect } from 'node:util';
import { warnIfLeaveRefused } from '../acl-refusal.js';
import type { LockBackend, ReleaseWitness } from '../backend.js';
import { unavailableOn } from '../backends/connection-errors.js';
import { clockDrift } from '../clock-drift.js';
import {
  AcquireTimeoutError,
  callerKeyed,
  InvalidOptionError,
  LockAbortError,
  LockBusyError,
  LockerClosedError,
  LockLostError,
  type LockLostReason,
  LockUnavailableError,
} from '../errors.js';
import type { AttemptContext, HandedGrant, ReleaseReply } from '../protocol.js';
import type { AcquireOptions, Lock, Locker, LockInspection, RetryOptions, UsingOptions } from '../types.js';
import { backoff } from './backoff.js';
import { isUnreachable, pastValidity, redacted, withDeadline } from './deadline.js';
import {
  type AcquireEvent,
  type AcquireTraceContext,
  acquireTraced,
  acquireTracing,
  channels,
  type ExtendEvent,
  type LockEvent,
  type LostEvent,
  type ReleaseEvent,
} from './events.js';
import { LockHandle } from './handle.js';
import { Hold, holdId } from './hold.js';
import {
  ACQUIRE_OPTIONS,
  checkBoolean,
  checkClock,
  checkFunction,
  checkKey,
  checkMs,
  checkOwner,
  checkPrefix,
  checkRetry,
  checkSignal,
  checkTtl,
  checkWait,
  DEFAULT_COMMAND_TIMEOUT,
  DEFAULT_PREFIX,
  DEFAULT_RETRY,
  DEFAULT_TTL,
  DEFAULT_WAIT,
  orDefault,
  refuseUnknown,
  USING_OPTIONS,
} from './options.js';
import { pause } from './pause.js';
import { enclosingHold, runInSection } from './scope.js';
import { linkSignals } from './signals.js';
import { type Waiter, WaitQueues } from './waiters.js';
import { Watchdog } from './watchdog.js';

/** Defaults shared by every acquisition of one locker. */
export interface EngineOptions {
  /** Prepended to every key to form the Redis resource name. Default: `'lock:'`. */
  readonly prefix?: string;
  /** Default lease in ms for acquisitions that give none; such locks are renewed. Default: `30_000`. */
  readonly ttl?: number;
  /** Default wait for a busy lock in ms. Default: `10_000`. */
  readonly wait?: number;
  /** Whether locks without a fixed lease are renewed by the watchdog. Default: `true`. */
  readonly renew?: boolean;
  /** Backoff while waiting, and the attempt limit. Default: `{ base: 50, max: 1_000, jitter: 0.5, attempts: Infinity }`. */
  readonly retry?: RetryOptions;
  /** Monotonic clock in ms used for deadlines (injectable for tests). Default: `performance.now`. */
  readonly clock?: () => number;
  /**
   * This locker's identity, the start of every owner it makes. It need not be unique: replicas of
   * one service may share it, since a locker given an id adds a random UUID of its own to its
   * owners (`<id>:<uuid>:<n>`; `<uuid>:<n>` under the default). Default: a random UUID.
   */
  readonly id?: string;
  /**
   * Whether an acquisition nested inside the critical section of a `using` call for the same
   * key re-enters that hold (see "Re-entrancy" in the README). With `false` every acquisition
   * is a new owner, so a nested one waits for the outer one, as redlock's locks do. Default: `true`.
   */
  readonly reentrant?: boolean;
  /**
   * How long one round trip to Redis may take, in ms: an acquire attempt, a release, an extend,
   * an inspect, a renewal. A call that Redis does not answer in time (down, frozen, partitioned)
   * gives up with `LockUnavailableError` instead of waiting for the connection's own retries;
   * an attempt that lands later is undone. Default: `500`.
   */
  readonly commandTimeout?: number;
}

export const ENGINE_OPTIONS: readonly (keyof EngineOptions)[] = [
  'prefix',
  'ttl',
  'wait',
  'renew',
  'retry',
  'clock',
  'id',
  'reentrant',
  'commandTimeout',
];

interface Request {
  readonly key: string;
  readonly resource: string;
  readonly owner: string;
  /** Whether the owner is new, made for this call alone: no hold of it can exist but one this call took. */
  readonly fresh: boolean;
  /** The hold this acquisition re-enters: the caller is nested in its critical section. */
  readonly enclosing: Hold | undefined;
  readonly ttl: number;
  readonly wait: number;
  readonly renew: boolean;
  readonly retry: Required<RetryOptions>;
  readonly signal: AbortSignal | undefined;
}

/** Whose grant an undo gives back: a request's, or a hold's. */
type Holder = Pick<Request, 'resource' | 'owner'>;

/** What an acquisition's options decide, checked: `explicit` is the owner the caller gave. */
interface Settings extends Pick<Request, 'ttl' | 'wait' | 'renew' | 'retry' | 'signal'> {
  readonly explicit: string | undefined;
  readonly reentrant: boolean;
}

/** Owners this process has made: each fresh acquisition is an owner of its own. */
let lastOwner = 0;
/** Attempts this process has sent. */
let lastAttempt = 0;
/** Release ids this process has made. */
let lastRelease = 0;

/**
 * Turns a backend (a protocol on a topology) into a `Locker`: validation, waiting woken by
 * release messages, handles, re-entrancy, the watchdog, events and typed errors, once for
 * every protocol and topology.
 */
export function createEngine(backend: LockBackend, options: EngineOptions = {}): Locker {
  return new Engine(backend, options);
}

class Engine implements Locker {
  readonly id: string;
  /**
   * Random prefix of this locker's attempt and release ids, whose counters start at 1 in every
   * process: 64 bits, so that two processes' ids never meet. A Redisson unlock names its latch
   * with its id for 20 s, and a release finding another process's latch of that name would be
   * answered from it and free nothing.
   */
  private readonly tag = randomBytes(8).toString('hex');
  private readonly prefix: string;
  private readonly ttl: number;
  private readonly wait: number;
  private readonly renew: boolean;
  private readonly reentrant: boolean;
  private readonly timeout: number;
  private readonly retry: Required<RetryOptions>;
  private readonly clock: () => number;
  /** What every owner this locker makes starts with: unique to this locker, whatever its `id`. */
  private readonly ownerPrefix: string;
  /** Every hold not yet released or lost. */
  private readonly holds = new Set<Hold>();
  /**
   * The holds of explicit owners by `holdId`, for a later acquisition of the same owner to
   * re-enter. A fresh owner is made for one call, so its hold is never looked up: the common
   * path builds and hashes no id.
   */
  private readonly named = new Map<string, Hold>();
  /** Undefined when the backend has no release messages (`listen`): waiters then poll. */
  private readonly queues: WaitQueues | undefined;
  /** The backend undoes an attempt by its id alone (see `grant`): decided once, not per grant. */
  private readonly undoesAttempts: boolean;
  private readonly watchdog: Watchdog;
  private readonly closing = new AbortController();
  /** What `close()` answers, from its first call on. */
  private closed: Promise<void> | undefined;
  /**
   * Waiting calls asleep between attempts. `close()` wakes them and they find the locker closed:
   * a sleep listening on the closing signal would add and remove an event listener per pause.
   */
  private readonly asleep = new Set<Waiter>();
  /**
   * What must reach Redis before `close()` closes the backend, besides the running calls: attempts
   * given up on while still in flight (a grant that lands is undone), undos, the cleanups of calls
   * that gave up (a queue place left behind would be handed the lock by the next release), and the
   * releases of lost holds. Rare, so a Set; the common path only counts calls (`running`).
   */
  private readonly pending = new Set<Promise<unknown>>();
  /** Acquire calls not yet settled, cleanup included: `close()` waits for them. */
  private running = 0;
  /** Set while `close()` waits for the running calls: called when the last one settles. */
  private idle: (() => void) | undefined;
  private readonly unwatchMaster: () => void;

  constructor(
    private readonly backend: LockBackend,
    options: EngineOptions,
  ) {
    refuseUnknown(options, ENGINE_OPTIONS, 'the locker options');
    const given: EngineOptions = options;
    this.prefix = checkPrefix(orDefault(given.prefix, DEFAULT_PREFIX));
    this.ttl = this.lease(orDefault(given.ttl, DEFAULT_TTL));
    this.wait = checkWait(orDefault(given.wait, DEFAULT_WAIT));
    this.renew = checkBoolean(given.renew, 'renew') ?? true;
    this.reentrant = checkBoolean(given.reentrant, 'reentrant') ?? true;
    this.timeout = checkMs(orDefault(given.commandTimeout, DEFAULT_COMMAND_TIMEOUT), 'commandTimeout');
    this.retry = checkRetry(given.retry, DEFAULT_RETRY);
    this.clock = checkClock(given.clock);
    this.id = given.id === undefined ? randomUUID() : checkOwner(given.id, 'id');
    // A configured id is typically a service's name, shared by its replicas and by its restarts,
    // each counting owners from 1: owners made from it alone would collide, and a fresh owner that
    // finds its own name holding a key takes that hold for its own.
    this.ownerPrefix = given.id === undefined ? `${this.id}:` : `${this.id}:${randomUUID()}:`;
    const listen = backend.listen?.bind(backend);
    this.queues = listen ? new WaitQueues(backend.protocol, listen, this.clock) : undefined;
    this.undoesAttempts = backend.undo !== undefined && backend.protocol.undo !== undefined;
    // Every call given a signal links it to this one while it runs: many such calls are normal.
    setMaxListeners(0, this.closing.signal);
    this.watchdog = new Watchdog(backend, this.clock, this.timeout, {
      renewed: (hold) => this.emit('extend', hold, () => ({ validUntil: hold.validUntil, renewal: true })),
      refused: (hold, within) => this.refused(hold, within),
      lost: (hold, reason, cause) => this.lose(hold, reason, cause),
    });
    this.unwatchMaster = backend.onMasterChange?.((affects) => this.masterChanged(affects)) ?? (() => {});
  }

  acquire(key: string, options: AcquireOptions = {}): Promise<Lock> {
    let request: Request;
    try {
      request = this.request(key, options);
    } catch (error) {
      return Promise.reject(error);
    }
    // Not an async function: that would add a promise and two turns of the microtask queue.
    if (!acquireTraced()) return this.run(request);
    return this.traced(request, (traced, trace) => this.run(traced, trace));
  }

  async tryAcquire(key: string, options: Omit<AcquireOptions, 'wait'> = {}): Promise<Lock | null> {
    refuseUnknown(
      withoutUndefinedWait(options),
      ACQUIRE_OPTIONS.filter((name) => name !== 'wait'),
      'the tryAcquire options',
    );
    return this.traced(this.request(key, { ...options, wait: 0 }), async (request, trace) => {
      try {
        return await this.run(request, trace);
      } catch (error) {
        if (error instanceof LockBusyError) return null;
        throw error;
      }
    });
  }

  using<T>(key: string, options: UsingOptions | undefined, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  using<T>(key: string, fn: (lock: Lock) => Promise<T> | T): Promise<T>;
  async using<T>(
    key: string,
    optionsOrFn: UsingOptions | undefined | ((lock: Lock) => Promise<T> | T),
    maybeFn?: (lock: Lock) => Promise<T> | T,
  ): Promise<T> {
    // Ignored, they would let a call meant to give up after its `wait` wait on.
    if (typeof optionsOrFn === 'function' && maybeFn !== undefined)
      throw new InvalidOptionError(
        'options',
        undefined,
        'options',
        'invalid options: a function, then something more (using takes the options before the function: using(key, options, fn))',
      );
    // Options left undefined count as none, as in acquire: a wrapper passing its own optional ones on.
    const [options, fn] =
      typeof optionsOrFn === 'function'
        ? [{}, optionsOrFn]
        : [optionsOrFn === undefined ? {} : optionsOrFn, maybeFn];
    checkFunction(fn, 'fn', 'a function to run');
    refuseUnknown(options, USING_OPTIONS, 'the using options');
    const { rejectOnLoss, ...acquireOptions } = options;
    const rejects = checkBoolean(rejectOnLoss, 'rejectOnLoss') ?? true;
    const lock = (await this.acquire(key, acquireOptions)) as LockHandle;
    // Lost between the grant and now (close() ran in between, the process stalled past the
    // lease): the routine would run without the lock.
    const lostBefore = this.lostDuring(lock.hold);
    if (lostBefore) {
      await lock.release().catch(() => {});
      // As for any call still acquiring when close() was called.
      throw lostBefore.reason === 'closed' ? new LockerClosedError() : lostBefore;
    }
    let outcome: PromiseSettledResult<T>;
    try {
      outcome = { status: 'fulfilled', value: await runInSection(this, lock, () => fn(lock)) };
    } catch (reason) {
      outcome = { status: 'rejected', reason };
    }
    const known = rejects ? this.lostDuring(lock.hold) : undefined;
    // The routine completed under the lock: a release that cannot reach Redis must not turn that
    // into a failure (a caller would run the work again). The lock ends by its lease, unrenewed.
    const completed = outcome.status === 'fulfilled' && !known;
    await lock.release().catch((error: unknown) => {
      if (completed && !(error instanceof LockUnavailableError)) throw error;
    });
    const lost = known ?? (rejects ? takenAtRelease(lock.hold) : undefined);
    if (lost) throw lost.with(outcome);
    if (outcome.status === 'rejected') throw outcome.reason;
    return outcome.value;
  }

  /**
   * How printers show a locker. Without it chai's printer calls a method named `inspect`: here a
   * lock read with a depth for key, whose rejection nobody handles.
   */
  [inspect.custom](_depth: number, options: InspectOptions, print: typeof inspect): string {
    const shown = { id: this.id, protocol: this.backend.protocol.name, prefix: this.prefix };
    return `Locker ${print(shown, options)}`;
  }

  async inspect(key: string): Promise<LockInspection> {
    const resource = this.resourceOf(checkKey(key));
    let inspection: Awaited<ReturnType<LockBackend['inspect']>>;
    try {
      inspection = await withDeadline(this.backend.inspect(resource), this.timeout);
    } catch (error) {
      throw callerKeyed(unavailableOn(this.backend, error, key, 'inspect'), { key, resource });
    }
    return { ...inspection, protocol: this.backend.protocol.name };
  }

  async isLocked(key: string): Promise<boolean> {
    return (await this.inspect(key)).held;
  }

  close(): Promise<void> {
    // A second caller (a shutdown hook beside the app's own) waits for the same releases: it may
    // quit the connection once its call resolves.
    this.closed ??= this.shutDown();
    return this.closed;
  }

  private async shutDown(): Promise<void> {
    this.closing.abort(new LockerClosedError());
    for (const waiter of this.asleep) waiter.wake?.();
    this.watchdog.stop();
    this.unwatchMaster();
    this.queues?.close();
    const held = [...this.holds.values()];
    // Handles must stop believing before Redis frees the keys to others.
    for (const hold of held) this.lose(hold, 'closed');
    // The handles nobody had released by now, counted after the losses: a release already called
    // sends its own, including one an abort listener just called (close() must not send it too).
    // Each is named: a copy resent after a lost reply must not take off a second count, which may
    // be another locker's hold of the same explicit owner; so is a release that failed, by its own
    // id, as it may have landed.
    const releaseIds = held.map((hold) => {
      const failed = [...(hold.failedReleases ?? [])];
      const fresh = Array.from({ length: hold.handles - failed.length }, () => this.releaseId());
      // One whose late answer came landed: sent again, it could free the key someone took since.
      const resent = failed.filter((id) => hold.lateRelease(id) === undefined);
      hold.closedIds = new Set(resent);
      return [...resent, ...fresh];
    });
    // Behind any renewal or extend in flight, so that the release sends the token it leaves.
    await Promise.allSettled([
      // An attempt in flight may take its allowance (WAIT) as well before its grant is undone.
      withDeadline(this.drain(), this.timeout + (this.backend.acquireAllowance ?? 0)),
      ...held.map((hold, i) =>
        hold.serial(async () => {
          const releases = await Promise.allSettled(
            releaseIds[i]!.map((id) =>
              withDeadline(
                this.backend.release(hold.resource, hold.owner, hold.token, undefined, id),
                this.timeout,
              ),
            ),
          );
          hold.closedRelease =
            releases.find((release) => release.status === 'fulfilled' && release.value === 'released') ??
            releases.at(-1);
        }),
      ),
    ]);
    await withDeadline(this.backend.close(), this.timeout).catch(() => {});
  }

  /** Settles once no call runs and nothing is pending, including what settling work starts (a late grant's undo). */
  private async drain(): Promise<void> {
    for (;;) {
      if (this.running > 0) {
        await new Promise<void>((resolve) => {
          this.idle = resolve;
        });
      } else if (this.pending.size > 0) {
        await Promise.allSettled([...this.pending]);
      } else {
        return;
      }
    }
  }

  /** Work nobody awaits (a cleanup): bounded by the command timeout, never failing, and waited for by `close()`. */
  private background(work: Promise<unknown>): Promise<void> {
    return this.track(withDeadline(work, this.timeout).then(noop, noop));
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.pending.add(work);
    const settled = () => this.pending.delete(work);
    work.then(settled, settled);
    return work;
  }

  checkValidity(hold: Hold): void {
    // A hold released (forgotten) is over: its lease running out later loses nothing.
    if (!hold.lost && this.holds.has(hold) && this.clock() >= hold.validUntil) {
      this.lose(hold, hold.renewalError === undefined ? 'expired' : 'renewal-failed', hold.renewalError);
    }
  }

  remaining(hold: Hold): number {
    this.checkValidity(hold);
    return hold.lost ? 0 : hold.validUntil - this.clock();
  }

  assertHeld(hold: Hold): void {
    this.checkValidity(hold);
    if (hold.lost) throw hold.lost;
  }

  extend(hold: Hold, ttl: number | undefined): Promise<void> {
    const lease = ttl === undefined ? hold.ttl : this.lease(ttl);
    const calledAt = this.clock();
    return hold.serial(async () => {
      this.assertHeld(hold);
      const timeout = this.timeLeft(calledAt);
      const sentAt = this.clock();
      let result: Awaited<ReturnType<LockBackend['extend']>>;
      try {
        result = await withDeadline(
          this.backend.extend(hold.resource, hold.owner, hold.token, lease),
          timeout,
        );
      } catch (error) {
        // Unanswered, it may still have landed: a shorter lease would then end sooner than ours.
        const validity = this.backend.validityOf?.(lease) ?? lease - clockDrift(lease);
        hold.validUntil = Math.min(hold.validUntil, sentAt + validity);
        this.watchdog.reschedule(hold);
        throw callerKeyed(unavailableOn(this.backend, error, hold.key, 'extend'), hold);
      }
      if (!result) {
        await this.refused(hold, this.timeLeft(calledAt));
        throw hold.lost;
      }
      // Even for a hold lost meanwhile: `close()` releases it next, with the token Redis has now.
      hold.token = result.token;
      if (hold.lost) throw hold.lost;
      hold.ttl = lease;
      hold.renewedAt = sentAt;
      hold.validUntil = sentAt + result.validity;
      this.watchdog.reschedule(hold);
      this.emit('extend', hold, () => ({ validUntil: hold.validUntil, renewal: false }));
    });
  }

  /** A ttl checked by the engine's rules and the protocol's own (a format in whole seconds), before anything is written. */
  private lease(ttl: unknown): number {
    const checked = checkTtl(ttl);
    this.backend.protocol.checkTtl?.(checked);
    return checked;
  }

  /**
   * What is left of `commandTimeout` for an operation called at `calledAt` that waited its turn
   * behind the hold's renewal in flight: its deadline counts from the call. With nothing left it
   * is still sent (a renewal answered just late did land, and a release that lands frees the
   * lock), but its caller is answered at once.
   */
  private timeLeft(calledAt: number): number {
    return Math.max(0, calledAt + this.timeout - this.clock());
  }

  releaseId(): string {
    lastRelease += 1;
    return this.tag + lastRelease.toString(16).padStart(16, '0');
  }

  /**
   * Gives up one handle's hold. A release Redis did not answer rejects with
   * `LockUnavailableError` and may be retried (with the same `id`); the handle no longer keeps
   * the hold renewed meanwhile (`renews`: it asked for renewal, and this is its first release
   * call), so with no other renewing handle the lock ends by its lease at the latest.
   */
  release(
    hold: Hold,
    id: string,
    renews: boolean,
    first: boolean,
    attempt?: AttemptContext,
  ): Promise<ReleaseReply> {
    hold.handles -= 1;
    hold.failedReleases?.delete(id);
    if (renews) hold.renewers -= 1;
    // `close()` releases the handles not released before it, not this one.
    const beforeClose = !this.closing.signal.aborted;
    const calledAt = this.clock();
    return hold.serial(async () => {
      let result: ReleaseReply;
      try {
        result = await this.releaseReply(hold, id, beforeClose, calledAt, first, attempt);
      } catch (failure) {
        hold.handles += 1;
        hold.failedReleases ??= new Set();
        hold.failedReleases.add(id);
        const error = callerKeyed(redacted(failure), hold);
        this.emitRelease(hold, 'error', false, error);
        throw unavailableOn(this.backend, error, hold.key, 'release');
      }
      // A retry answered by the release that landed late, which ended the hold and said so.
      if (hold.endedLate) return result;
      // Counted now, not when called: a re-entry granted while this release waited its turn (or
      // was on the wire) added a handle, which keeps the hold and its renewals.
      const ended = hold.handles === 0;
      if (ended) this.forget(hold);
      this.emitRelease(hold, result, ended);
      return result;
    });
  }

  /**
   * Redis's answer to one handle's release, sent only while the hold is ours to release. An
   * answer that proves the key was no longer ours loses the hold ('taken'), as a renewal's would.
   */
  private async releaseReply(
    hold: Hold,
    id: string,
    beforeClose: boolean,
    calledAt: number,
    first: boolean,
    attempt: AttemptContext | undefined,
  ): Promise<ReleaseReply> {
    const closed = hold.closedRelease;
    if (hold.lost?.reason === 'closed' && !beforeClose && closed && (first || hold.closedIds?.has(id))) {
      // `close()` released it (a handle not released before, or a release that had failed), and
      // this waited its turn behind that release. A retry of it is answered the same: sent under
      // an id of its own, it would take off a count `close()` may have taken off already.
      if (first) hold.closedIds?.add(id);
      if (closed.status === 'rejected') throw closed.reason;
      return closed.value;
    }
    // The engine gave this hold up: that is the answer. A fresh owner's hold lost to a master
    // change or to our clock may still be in Redis: released in the background by its owner's
    // name (no other hold goes by it), it frees the key now rather than when it expires.
    if (hold.lost && hold.lost.reason !== 'closed') {
      if (releasedByName(hold)) this.releaseLost(hold, id);
      // Unless an earlier release of it, given up on, landed after all.
      return hold.lateRelease(id) === 'released' ? 'released' : 'not-owner';
    }
    // A retry of a release that landed late and ended the hold: sent again, it could take off a
    // hold the owner has taken since.
    if (hold.endedLate) return 'released';
    const landed = hold.lateRelease(id);
    if (landed) return landed;
    const timeout = this.timeLeft(calledAt);
    const witness: ReleaseWitness = { ranOnce: false };
    // From now on this release may land, even if it fails: a loss must not undo its attempt as
    // well, which would take off a second count. Until now (waiting its turn behind a renewal), a
    // loss undoes it, and this release then sends nothing.
    if (attempt) hold.unreleased?.delete(attempt);
    const result = await withDeadline(
      this.backend.release(
        hold.resource,
        hold.owner,
        hold.token,
        (grant) => this.queues?.handOver(hold.resource, grant),
        id,
        witness,
        attempt?.attempt,
      ),
      timeout,
      (late) => {
        if (late.status !== 'fulfilled') return;
        // A copy of it (a retry) lands after it and finds nothing: the first one freed the lock.
        hold.landedLate(id, late.value);
        // It freed the lock after all: the hold ends now, instead of being reported lost when
        // its lease runs out. Only when no other handle re-entered it since.
        if (late.value === 'released' && hold.handles === 1 && !hold.lost) {
          hold.endedLate = true;
          this.forget(hold);
          this.emitRelease(hold, late.value, true);
        }
      },
    );
    if (result !== 'not-owner') return result;
    // A retry sent before the first copy's late answer came: that copy freed the lock.
    const freed = hold.lateRelease(id);
    if (freed) return freed;
    // Proof only from the one copy of a first release, answered while the lease still held: a copy
    // resent after a lost reply, or a retry after an unanswered release, finds the key the first
    // freed gone, and a lease that ran out after the holder was done found it gone too.
    if (first && witness.ranOnce && this.clock() < hold.validUntil) this.lose(hold, 'taken');
    return result;
  }

  /** The `release` event of one handle's release: Redis's answer, or `'error'` with what failed. */
  private emitRelease(hold: Hold, result: ReleaseReply | 'error', ended: boolean, error?: unknown): void {
    this.emit('release', hold, () => ({
      held: this.clock() - hold.acquiredAt,
      result,
      ended,
      ...(result === 'error' ? { error } : {}),
    }));
  }

  private releaseLost(hold: Hold, id: string): void {
    const releasing = this.backend.release(
      hold.resource,
      hold.owner,
      hold.token,
      (grant) => this.queues?.handOver(hold.resource, grant),
      id,
    );
    this.background(releasing);
  }

  checkOptions(options: AcquireOptions): void {
    this.settings(options);
  }

  private request(key: string, options: AcquireOptions): Request {
    checkKey(key);
    const settings = this.settings(options);
    const resource = this.resourceOf(key);
    const { explicit } = settings;
    const enclosing =
      explicit === undefined && settings.reentrant ? enclosingHold(this, resource) : undefined;
    // Field by field, not spread: a spread costs the hot path about 2 µs per call.
    return {
      key,
      resource,
      owner: explicit ?? enclosing?.owner ?? this.newOwner(),
      fresh: explicit === undefined && enclosing === undefined,
      enclosing,
      ttl: settings.ttl,
      wait: settings.wait,
      renew: settings.renew,
      retry: settings.retry,
      signal: settings.signal,
    };
  }

  /** An acquisition's options, checked, with this locker's defaults for those it leaves out. */
  private settings(options: AcquireOptions): Settings {
    refuseUnknown(options, ACQUIRE_OPTIONS, 'the acquire options');
    const given: AcquireOptions = options;
    return {
      explicit: given.owner === undefined ? undefined : checkOwner(given.owner),
      reentrant: checkBoolean(given.reentrant, 'reentrant') ?? this.reentrant,
      ttl: given.ttl === undefined ? this.ttl : this.lease(given.ttl),
      wait: given.wait === undefined ? this.wait : checkWait(given.wait),
      renew: checkBoolean(given.renew, 'renew') ?? (this.renew && given.ttl === undefined),
      retry: checkRetry(given.retry, this.retry),
      signal: checkSignal(given.signal),
    };
  }

  /** Unique across processes: this locker's random tag and a counter. */
  private attemptId(): string {
    lastAttempt += 1;
    return `${this.tag}${lastAttempt.toString(36)}`;
  }

  private newOwner(): string {
    lastOwner += 1;
    return `${this.ownerPrefix}${lastOwner}`;
  }

  /**
   * The Redis name of `key`, refused (named by the caller's key) as the protocol refuses it: an
   * inspection of a name acquisitions refuse would read another lock's side keys.
   */
  private resourceOf(key: string): string {
    const resource = this.prefix + key;
    try {
      this.backend.protocol.validate(resource, this.backend.cluster);
    } catch (error) {
      throw callerKeyed(error, { key, resource });
    }
    return resource;
  }

  /** Runs one acquire call inside `acquireTracing` when someone subscribes to it (and directly otherwise). */
  private traced<T>(
    request: Request,
    call: (request: Request, trace?: AcquireTraceContext) => Promise<T>,
  ): Promise<T> {
    if (!acquireTraced()) return call(request);
    const context: AcquireTraceContext = {
      key: request.key,
      protocol: this.backend.protocol.name,
      ttl: request.ttl,
      wait: request.wait,
    };
    return acquireTracing.tracePromise(() => call(request, context), context);
  }

  /**
   * One acquisition attempt, bounded by the command timeout. A re-entry goes through its hold's
   * queue (so it never races a renewal that rewrites the token). A grant that lands after the
   * attempt was given up on goes to `lateGrant`.
   */
  private attempt(
    request: Request,
    context: AttemptContext,
    call: AcquireCall,
    signal: AbortSignal | undefined,
  ): Promise<BackendAttempt> {
    if (!request.enclosing) return this.send(request, context, call, this.timeout, signal);
    // Its deadline counts from now, not from its turn behind a renewal in flight.
    const calledAt = this.clock();
    return request.enclosing.serial(() =>
      this.send(request, context, call, this.timeLeft(calledAt), undefined),
    );
  }

  /**
   * A fresh owner's attempt is given up on as soon as `signal` aborts: its grant, landing late,
   * is undone once the call has ended. Other owners wait for the answer, since their next call
   * must not find its queue place taken out by this call's cleanup landing late.
   */
  private send(
    request: Request,
    context: AttemptContext,
    call: AcquireCall,
    timeout: number,
    signal: AbortSignal | undefined,
  ): Promise<BackendAttempt> {
    let givenUp = false;
    let fired: Promise<BackendAttempt> | undefined;
    let firedOn: number | undefined;
    const fire = () => {
      firedOn = this.backend.connectionCloses;
      fired = this.backend.acquire(request.resource, request.owner, request.ttl, context);
      return fired;
    };
    const { unanswered } = call;
    let sent: Promise<BackendAttempt>;
    if (unanswered === undefined) {
      sent = fire();
    } else {
      const closes = this.backend.connectionCloses!;
      // One attempt of a call on the wire at a time, on a backend of one connection. Behind one
      // still unanswered, a new attempt would be answered only after it (a connection answers in
      // order): it would win nothing, and against a frozen server each retry would add a command
      // that ioredis keeps until the server answers, then runs with the others. This one waits
      // its deadline for that answer instead, and is sent only if the answer comes in time.
      let before = unanswered.closes === closes ? unanswered.answer : undefined;
      // Not once that connection has closed: the client resent the attempt first (its late
      // grant is undone when it is answered), or dropped it for good
      // (`autoResendUnfulfilledCommands: false`), answering nothing ever. A grant of it then
      // nobody would undo, and an owner that is not fresh would be counted a second hold
      // (a re-entry) by this attempt, one that outlives the handle's release for the whole
      // lease. So it is undone first, by its id: nothing if it never ran, and once however often
      // sent (a resent copy's late grant is undone as well). Until that undo is answered the
      // attempt stays in doubt: an undo dropped in turn is sent again before the next attempt.
      if (before === undefined && !request.fresh && this.undoesAttempts && this.backend.dropsUnanswered) {
        before = this.backendUndo(request, '', unanswered.attempt);
        awaitAnswer(call, before, closes, unanswered.attempt);
      }
      sent = before ? before.then(noop, noop).then(() => (givenUp ? NOT_SENT : fire())) : fire();
    }
    return withDeadline(
      sent,
      timeout + (this.backend.acquireAllowance ?? 0),
      (late) => {
        if (late.status !== 'fulfilled' || !late.value.acquired) return;
        const { token } = late.value;
        this.lateGrant(request, call, () =>
          this.backendUndo(request, token, call.settled ? { ...context, ended: true } : context),
        );
      },
      // Given up on, it may still land after the call has settled: `close()` waits for it, and
      // the call's cleanup goes after it. For one more command timeout at most: a client that
      // drops unanswered commands (`autoResendUnfulfilledCommands: false`) never settles them.
      () => {
        givenUp = true;
        call.givenUp = this.background(sent);
        if (fired && firedOn !== undefined) awaitAnswer(call, fired, firedOn, context);
      },
      request.fresh ? signal : undefined,
    );
  }

  /**
   * A grant that landed after its attempt was given up on (see `send`), or one server's of
   * several after the attempt was undone (`AttemptContext.lateGrant`): undone at once when it
   * counted a hold of its own (a re-entry, an explicit owner). A fresh owner's call may still get
   * that key by a later attempt, and then its hold does until it ends: undone once the call has
   * ended without the lock, or once that hold has ended (a release that did not reach that
   * server leaves the key to the undo), unless a hold granted afresh under that name took it
   * since, or the hold is released by its owner's name.
   */
  private lateGrant(request: Request, call: AcquireCall, undo: () => Promise<unknown>): void {
    const { hold } = call;
    // A hold released by its owner's name needs no undo: that release, sent (now or at the handle's
    // release) after this grant's attempt on the same connections, takes its count off; an undo as
    // well would take off a second count, that of a re-entry granted under the name since.
    const holdOver = hold?.fresh === true && !this.holds.has(hold) && !releasedByName(hold);
    if (!request.fresh || (call.settled && !call.acquired) || holdOver) {
      this.background(undo());
    } else if (!call.settled) {
      call.lateUndos ??= [];
      call.lateUndos.push(undo);
    }
  }

  /**
   * Gives back the grant of the attempt made with `context` that nobody will use; bounded, and
   * never fails the caller. Undone as that attempt's where the backend can (a re-entry's undo must
   * not take off the outer hold on a RedLock master the attempt never reached), else released.
   */
  private undo(request: Holder, token: string, context: AttemptContext): Promise<void> {
    return this.background(this.backendUndo(request, token, context));
  }

  private backendUndo(request: Holder, token: string, context: AttemptContext): Promise<unknown> {
    const { resource, owner } = request;
    return this.backend.undo
      ? this.backend.undo(resource, owner, token, context)
      : this.backend.release(resource, owner, token);
  }

  /** The acquire loop: attempt, and while refused wait for a release message, the backoff or the holder's expiry. */
  private async run(request: Request, trace?: AcquireTraceContext): Promise<Lock> {
    if (this.closing.signal.aborted) throw new LockerClosedError();
    const linked = request.signal ? linkSignals(request.signal, this.closing.signal) : undefined;
    const signal = linked?.signal ?? this.closing.signal;
    const started = this.clock();
    // Made when the call first waits: most calls never do.
    let waiter: Waiter | undefined;
    // A call that may wait is queued by formats that queue waiters, for as long as its next
    // attempt may take to come (the longest backoff plus two round trips). One that polls is not:
    // a release would name it, or hand it the lock, and it would not hear.
    const queueLease = request.wait > 0 && this.queues ? request.retry.max + 2 * this.timeout : 0;
    // The release may hand the lock to the waiter itself (the protocol decides whom: fresh
    // owners). A renewed lock is handed over for no longer than the registration lasts, so a
    // waiter that crashed just before costs no more than that; the watchdog then renews it to
    // its full lease at once.
    const grantLease = request.renew ? Math.min(request.ttl, queueLease) : request.ttl;
    // The last refusal that queued the call, when it was sent and the server's clock then: a
    // handed grant's time is read against them.
    let queuedSentAt = Number.NaN;
    let queuedServerTime = Number.NaN;
    // The fence of the last grant this call undid. A fresh owner's grant is undone by its name,
    // which also ends the lock a release handed it meanwhile (an attempt queued behind that
    // release finds it held and answers it as it stands): that grant's message may still come,
    // and fences only grow per key, so a handed grant at or below this fence is gone.
    let undoneFence = Number.NEGATIVE_INFINITY;
    let channel: string | undefined;
    let attempts = 0;
    let handoff = false;
    // Every field set now: the object keeps one shape whatever happens to the call.
    const call: AcquireCall = {
      acquired: false,
      settled: false,
      givenUp: undefined,
      leaving: false,
      lateUndos: undefined,
      hold: undefined,
      unanswered: undefined,
    };
    const lateGrant = (undo: () => Promise<unknown>) => this.lateGrant(request, call, undo);
    // Only a call that may wait is ever taken out of the queue: a single try needs no check.
    const wanted = request.wait > 0 ? () => !call.leaving : undefined;
    let unreachable: LockUnavailableError | undefined;
    this.running += 1;
    try {
      for (;;) {
        if (signal.aborted) throw signal.reason;
        const handed = waiter?.granted;
        if (handed && waiter) {
          waiter.granted = undefined;
          const { grant } = handed;
          const validity = handedValidity(grant, queuedServerTime, handed.at - queuedSentAt);
          // A grant read too late to trust goes the usual way: the next attempt finds it, as it
          // stands, and counts as a hand-off (the notice stays for it).
          if (grant.fence > undoneFence && this.clock() < queuedSentAt + validity) {
            waiter.notified = false;
            call.acquired = true;
            const reply = { fence: grant.fence, holds: 1, token: grant.token, validity };
            return this.grant(request, reply, queuedSentAt, started, attempts, true, call);
          }
        }
        attempts += 1;
        if (waiter) {
          handoff = waiter.notified;
          waiter.notified = false;
        }
        const sentAt = this.clock();
        const context: AttemptContext = {
          wait: request.wait,
          fresh: request.fresh,
          queueLease,
          queued: attempts > 1 && queueLease > 0,
          attempt: this.attemptId(),
          grantLease,
          lateGrant,
          wanted,
        };
        let attempt: BackendAttempt;
        try {
          attempt = await this.attempt(request, context, call, linked?.signal);
          unreachable = undefined;
        } catch (failure) {
          if (signal.aborted && failure === signal.reason) throw failure;
          const error = callerKeyed(redacted(failure), request);
          // Redis unreachable or too slow: retried while the wait lasts, as a refusal would be.
          if (!isUnreachable(error)) throw error;
          unreachable = unavailableOn(this.backend, error, request.key, 'acquire') as LockUnavailableError;
          attempt = { acquired: false, remaining: -1 };
        }
        let remaining: number;
        if (attempt.acquired) {
          const { unusable } = attempt;
          if (unusable === undefined && !signal.aborted && this.clock() < sentAt + attempt.validity) {
            call.acquired = true;
            return this.grant(request, attempt, sentAt, started, attempts, handoff, call, context);
          }
          const answeredIn = this.clock() - sentAt;
          undoneFence = Math.max(undoneFence, attempt.fence);
          // Within the call's deadline: a grant that took most of a round trip must not add the
          // undo's own command timeout to a call given one attempt.
          await this.withinCall(this.undo(request, attempt.token, context), request, started);
          if (signal.aborted) throw signal.reason;
          // Neither a grant the backend found unusable nor one whose reply came back after the
          // lease it granted could have ended is handed out. The key was free, so past the wait
          // this is Redis being unavailable or too slow, not a busy lock.
          unreachable = new LockUnavailableError(
            request.key,
            'acquire',
            unusable ? { cause: unusable } : pastValidity('granted', answeredIn, attempt.validity),
          );
          remaining = -1;
        } else {
          remaining = attempt.remaining;
          if (attempt.serverTime !== undefined) {
            queuedSentAt = sentAt;
            queuedServerTime = attempt.serverTime;
          }
        }
        const waited = this.clock() - started;
        // An abort or close() during the attempt above ends the call as such, a single try too:
        // no busy answer, no queue to join, no sleep to start.
        if (signal.aborted) throw signal.reason;
        if (request.wait === 0) throw unreachable ?? new LockBusyError(request.key, remaining);
        if (waited >= request.wait || attempts >= request.retry.attempts) {
          if (unreachable) throw unreachable;
          const limit = waited >= request.wait ? 'wait' : 'attempts';
          throw new AcquireTimeoutError(request.key, Math.round(waited), attempts, remaining, { limit });
        }
        waiter ??= { owner: request.owner, notified: false, granted: undefined, wake: undefined };
        const { queues } = this;
        if (queues && unreachable === undefined && (channel === undefined || queues.failed(channel))) {
          const joining = queues.join(request.resource, request.owner, waiter, sentAt);
          // In the queue from now on, whether or not the subscription comes in time: left in `finally`.
          channel = joining.channel;
          const left = Math.max(1, Math.min(request.wait - waited, this.timeout));
          if (await this.subscribed(joining.subscribed, waiter, linked?.signal, left)) continue;
          if (signal.aborted) throw signal.reason;
        }
        if (waiter.notified) continue;
        const untilExpiry = remaining > 0 ? remaining + 1 : Number.POSITIVE_INFINITY;
        // A waiter the server queued is handed the lock or named by the release, so it polls
        // only to renew its registration (and to bound a lost message): at the longest backoff.
        const step = queuedSentAt === sentAt ? request.retry.max : backoff(attempts - 2, request.retry);
        const delay = Math.min(step, request.wait - (this.clock() - started), untilExpiry);
        const sleeping = waiter;
        await pause(Math.max(0, Math.ceil(delay)), linked?.signal, (wake) => this.sleep(sleeping, wake));
      }
    } catch (error) {
      if (error === signal.reason && !(error instanceof LockerClosedError)) {
        throw new LockAbortError(request.key, error);
      }
      throw error;
    } finally {
      call.settled = true;
      if (trace) {
        trace.attempts = attempts;
        trace.waited = this.clock() - started;
      }
      linked?.dispose();
      if (channel !== undefined && waiter) this.queues?.leave(channel, waiter);
      if (!call.acquired) {
        // A fresh owner is never asked for again; a reused one (explicit, re-entrant) must not
        // find its next call's queue place taken out by this call's cleanup landing late.
        await this.giveUp(request, call, attempts > 0, queueLease, started, signal.aborted && request.fresh);
      }
      this.running -= 1;
      if (this.running === 0) this.idle?.();
    }
  }

  /**
   * Cleans up after a call that ends without the lock: undoes a grant that came too late, and
   * takes the owner out of the server's queue if it may be there. Within the call's own deadline
   * (the wait and one attempt) it settles with that done; past it, with Redis slow or gone, the
   * cleanup goes on alone, as it does when `atOnce` (a fresh owner's call its signal or `close()`
   * ended): the caller asked to stop now, and with Redis gone the cleanup would hold it for a
   * command timeout.
   */
  private async giveUp(
    request: Request,
    call: AcquireCall,
    attempted: boolean,
    queueLease: number,
    started: number,
    atOnce: boolean,
  ): Promise<void> {
    const cleanup: Promise<unknown>[] = [];
    for (const undo of call.lateUndos ?? []) cleanup.push(this.background(undo()));
    // An attempt still unanswered may have been granted. Its answer comes late (its grant is
    // undone then, see `send`), or never once its connection closed: a client that drops what
    // it had not had answered (`autoResendUnfulfilledCommands: false`) settles nothing, and no
    // next attempt undoes it first, so the key would stay held by nobody for the whole lease. So
    // it is undone when its connection closed, now or while its answer is still awaited: nothing
    // if it never ran, and once however often sent (by its id, or by a fresh owner's name, which
    // nothing else goes by). Not while it may still be answered: against a frozen server each
    // undo would be one more command kept until the server answers. Nor for an owner that is not
    // fresh on a format without an undo of its own, whose release would take off one of that
    // owner's holds whether or not the attempt ran (as in `send`).
    const { unanswered } = call;
    if (unanswered && this.backend.dropsUnanswered && (request.fresh || this.undoesAttempts)) {
      const undoIfDropped = async () => {
        if (call.unanswered !== unanswered || this.backend.connectionCloses === unanswered.closes) return;
        await this.backendUndo(request, '', { ...unanswered.attempt, ended: true });
      };
      const closed = this.backend.connectionCloses !== unanswered.closes;
      const undone = closed ? undoIfDropped() : call.givenUp?.then(undoIfDropped);
      if (undone) cleanup.push(this.background(undone));
    }
    const { abandon } = this.backend;
    // Any call that may wait: a format may queue it by its wait alone (Redisson's fair lock), also
    // when this engine polls and sent no queue lease.
    if (attempted && request.wait > 0 && abandon) {
      const send = () => {
        call.leaving = true;
        return withDeadline(
          abandon.call(this.backend, request.resource, request.owner, {
            wait: request.wait,
            fresh: request.fresh,
            queueLease,
          }),
          this.timeout,
        );
      };
      // An attempt given up on may still land: leaving the queue before it does would leave its
      // owner queued, to be handed the lock. One the backend has not sent yet (it first checks
      // the server, or resends an uncached script) it never sends once this is sent (see
      // `AttemptContext.wanted`); one sent is waited for here.
      const leaving = call.givenUp ? call.givenUp.then(send) : send();
      cleanup.push(this.track(leaving.catch(warnIfLeaveRefused)));
    }
    if (cleanup.length > 0 && !atOnce) await this.withinCall(Promise.all(cleanup), request, started);
  }

  /**
   * Waits for `cleanup` while the call's own deadline (its wait and one attempt) lasts; past it,
   * the cleanup goes on alone (`close()` waits for it).
   */
  private async withinCall(cleanup: Promise<unknown>, request: Request, started: number): Promise<void> {
    const left = started + request.wait + this.timeout + (this.backend.acquireAllowance ?? 0) - this.clock();
    // Each step is bounded by the command timeout already, so that bound is never longer.
    if (left > 0) await withDeadline(cleanup, Math.min(left, this.timeout)).catch(() => {});
  }

  /**
   * Waits for the wait queue's subscription to be active: answers whether a release may have been
   * missed meanwhile. Gives up (false) after `ms` (the time left to wait, at most the command
   * timeout), when a notice wakes the waiter, or when `close()` does; rejects when `signal`
   * aborts. A waiter that gave up stays in the queue: messages reach it once the subscription is
   * active, and it polls until then.
   */
  private async subscribed(
    subscribed: Promise<boolean>,
    waiter: Waiter,
    signal: AbortSignal | undefined,
    ms: number,
  ): Promise<boolean> {
    let stop: (() => void) | undefined;
    const gaveUp = pause(ms, signal, (wake) => {
      stop = wake;
      return this.sleep(waiter, wake);
    }).then(() => false);
    try {
      return await Promise.race([subscribed, gaveUp]);
    } finally {
      stop?.();
    }
  }

  /** Registers `waiter` as asleep until `wake`: a notice or `close()` ends its sleep. Answers what unregisters it. */
  private sleep(waiter: Waiter, wake: () => void): () => void {
    waiter.wake = wake;
    this.asleep.add(waiter);
    return () => {
      waiter.wake = undefined;
      this.asleep.delete(waiter);
    };
  }

  private grant(
    request: Request,
    reply: { fence: number; holds: number; token: string; validity: number; confirmed?: boolean },
    sentAt: number,
    started: number,
    attempts: number,
    handoff: boolean,
    call: AcquireCall,
    context?: AttemptContext,
  ): Lock {
    const id = request.fresh || request.enclosing ? undefined : holdId(request.resource, request.owner);
    const existing = id === undefined ? request.enclosing : this.named.get(id);
    let hold: Hold;
    // A hold released meanwhile (a retried re-entry that outlived its section) is not re-used.
    const live = existing !== undefined && this.holds.has(existing);
    if (live && reply.holds > 1) {
      hold = existing;
      hold.handles += 1;
      hold.token = reply.token;
      if (request.renew) hold.renewers += 1;
      hold.ttl = Math.max(hold.ttl, request.ttl);
      // The deadline the server honours now: a format may shorten the lease on re-entry.
      hold.validUntil = sentAt + reply.validity;
      this.watchdog.reschedule(hold);
    } else {
      // The new hold goes by that hold's owner name: a release of the old one would take it off.
      // Before the loss below, whose abort listeners may release the old one at once. Unless
      // Redis still counts the old one (it was lost by our clock while the re-entry was on the
      // wire): its release by the name must then take that count off, or the key outlives both.
      if (existing && reply.holds <= 1) existing.fresh = false;
      // Redis no longer counts the hold we knew of under this owner: it ended without us noticing,
      // by its lease if that may have run out (as any reader of it would find), else deleted (or
      // taken and freed) under us.
      if (live) {
        this.checkValidity(existing);
        this.lose(existing, 'taken');
      }
      hold = new Hold(
        request.key,
        request.resource,
        request.owner,
        reply.token,
        reply.fence,
        request.ttl,
        request.renew,
        sentAt + reply.validity,
        sentAt,
        this.clock(),
      );
      hold.confirmed = reply.confirmed === true;
      hold.fresh = request.fresh;
      this.holds.add(hold);
      if (id !== undefined) this.named.set(id, hold);
    }
    call.hold = hold;
    this.watchdog.watch(hold);
    const fence = hold === existing && this.backend.fenceKeptOnReentry ? hold.fence : reply.fence;
    this.emit('acquire', hold, () => ({
      fence,
      holds: reply.holds,
      waited: this.clock() - started,
      attempts,
      handoff,
    }));
    // An owner that is not fresh may have the key again by the time this hold is lost: the loss
    // gives this handle's count back by its attempt alone (see `lose`), where the format can.
    const undone = context && !hold.fresh && this.undoesAttempts ? undoContext(context) : undefined;
    if (undone) {
      hold.unreleased ??= new Set();
      hold.unreleased.add(undone);
    }
    return new LockHandle(this, hold, fence, reply.holds, request.renew, undone);
  }

  /**
   * The master behind some holds changed. A grant no replica confirmed may not exist on the new
   * master, and another owner may take the key there: those holds end now ('failover'), whoever
   * owns them (renewed first, a hold would be believed until the renewal's answer, or for the
   * rest of its lease while the new master does not answer). A confirmed one survives the change,
   * but its later renewals were not confirmed: it is renewed at once, on the new master, which
   * proves it is still ours or declares it taken.
   */
  private masterChanged(affects: (resource: string) => boolean): void {
    for (const hold of [...this.holds.values()]) {
      if (!affects(hold.resource)) continue;
      if (!hold.confirmed) this.lose(hold, 'failover');
      else this.watchdog.renewNow(hold);
    }
  }

  /** The loss to report when a critical section ends: the hold was lost, or its validity ended. */
  private lostDuring(hold: Hold): LockLostError | undefined {
    this.checkValidity(hold);
    return hold.lost;
  }

  /**
   * A renewal or extend Redis refused: the hold is taken, unless it was released meanwhile, or the
   * refusal came from a new master that a check due or under way reports within `within` ms (a
   * restart or failover: ioredis writes what it queued while disconnected before it emits
   * 'ready', on which that check is sent), which ends it as 'failover' first.
   */
  private async refused(hold: Hold, within: number): Promise<void> {
    const known = this.backend.masterKnown?.(hold.resource);
    if (known) await withDeadline(known, Math.max(1, within)).catch(() => {});
    if (this.holds.has(hold)) this.lose(hold, 'taken');
  }

  private lose(hold: Hold, reason: LockLostReason, cause?: unknown): void {
    if (hold.lost) return;
    hold.lose(
      new LockLostError(hold.key, reason, {
        ...(cause === undefined ? {} : { cause: callerKeyed(cause, hold) }),
        ...(reason === 'expired' ? { lease: hold.ttl } : {}),
      }),
    );
    this.forget(hold);
    // Redis may still count the handles not released (the new master got the hold, or the lease
    // outlived our clock), and by the owner's name they would stay: its next acquisition would
    // re-enter them and renew them. Each is undone by its attempt, which takes off a count only
    // where that attempt added it in the key's current life, never one the owner took since.
    // `close()` released them.
    if (hold.unreleased && reason !== 'closed') {
      for (const context of hold.unreleased) this.undo(hold, hold.token, context);
      hold.unreleased = undefined;
    }
    this.emit('lost', hold, () => ({ reason, error: hold.lost! }));
  }

  private forget(hold: Hold): void {
    this.watchdog.forget(hold);
    this.holds.delete(hold);
    if (this.named.size > 0 && this.named.get(hold.id) === hold) this.named.delete(hold.id);
  }

  /** `details` is only built when someone listens: events cost nothing on the hot path otherwise. */
  private emit<Name extends keyof HoldEvents>(
    name: Name,
    hold: Hold,
    details: () => Omit<HoldEvents[Name], keyof LockEvent>,
  ): void {
    if (!channels[name].hasSubscribers) return;
    channels[name].publish({
      key: hold.key,
      hold: hold.number,
      owner: hold.owner,
      protocol: this.backend.protocol.name,
      ...details(),
    });
  }
}

type BackendAttempt = Awaited<ReturnType<LockBackend['acquire']>>;

/** What an attempt never sent answers: a refusal with no TTL known. */
const NOT_SENT: BackendAttempt = { acquired: false, remaining: -1 };

/**
 * Notes `answer`, the reply to a command sent for `attempt` (the attempt, given up on, or its
 * undo) when the backend's connection had closed `closes` times, as the call's command on the
 * wire until it comes.
 */
function awaitAnswer(
  call: AcquireCall,
  answer: Promise<unknown>,
  closes: number,
  attempt: AttemptContext,
): void {
  const unanswered: Unanswered = { answer, closes, attempt };
  call.unanswered = unanswered;
  const answered = () => {
    if (call.unanswered === unanswered) call.unanswered = undefined;
  };
  answer.then(answered, answered);
}

function noop(): void {}

/**
 * What an undo at a loss needs of the attempt that granted a handle: not its closures, which hold
 * its call. That call has ended (with the lock) by the time the undo goes.
 */
function undoContext({ wait, queueLease, attempt }: AttemptContext): AttemptContext {
  return { wait, queueLease, attempt, ended: true };
}

/**
 * The loss Redis showed once a critical section that held its lock to the end was over: its
 * release, or a renewal it waited behind, found the key deleted or another owner's. A loss the
 * engine declared meanwhile on its own (the lease ran out by our clock, the master changed,
 * `close()`) says nothing of the section, which ended within its validity.
 */
function takenAtRelease(hold: Hold): LockLostError | undefined {
  return hold.lost?.reason === 'taken' ? hold.lost : undefined;
}

/**
 * Whether a lost hold is released by its owner's name (see `releaseReply`): a fresh owner's hold
 * that Redis may still count, lost to our clock, a renewal or a master change, or taken (a legacy
 * lock's owner record outlives a key a peer deleted, and counts the holds it keeps our other
 * owners out for); not one ended by `close()`, whose release went out already.
 */
function releasedByName(hold: Hold): boolean {
  return hold.fresh && hold.lost !== undefined && hold.lost.reason !== 'closed';
}

/**
 * How long a handed grant is certainly held, in ms from the send time of the refusal that
 * queued the call (NaN without one). The server wrote it `at - queuedServerTime` ms after it
 * answered that refusal, which the client sent earlier still; and no later than `elapsed`, the
 * client's ms from sending that refusal to receiving the grant: a server clock stepped forward
 * in between stretches the first, while the key still expires one lease after it was written.
 * The 1 ms covers both server times being cut to whole ms, and the drift margin covers the
 * whole span. Not floored at 0: a grant written before that refusal (its notice came late) has
 * expired since, or the attempt would have found it, and must expire at once here.
 */
function handedValidity(handed: HandedGrant, queuedServerTime: number, elapsed: number): number {
  const span = Math.min(handed.at - queuedServerTime, elapsed) + handed.lease;
  return span - clockDrift(span) - 1;
}

/** The payload of each per-hold event. */
interface HoldEvents {
  acquire: AcquireEvent;
  release: ReleaseEvent;
  extend: ExtendEvent;
  lost: LostEvent;
}

/** How one acquire call stands, for the attempts of it that answer after they were given up on. */
interface AcquireCall {
  acquired: boolean;
  settled: boolean;
  /**
   * Settles once the last attempt given up on (by its deadline or the call's signal) has, or one
   * command timeout later: it may still be on its way.
   */
  givenUp: Promise<unknown> | undefined;
  /** Its abandon is on its way: an attempt of it not sent yet must not be (`AttemptContext.wanted`). */
  leaving: boolean;
  /**
   * A fresh owner's grants that landed late while the call went on (a whole attempt's, or one
   * server's of several): undone if the call fails.
   */
  lateUndos: (() => Promise<unknown>)[] | undefined;
  /** The hold the call got: once it has ended, a late grant of the call's owner is no one's. */
  hold: Hold | undefined;
  /** An attempt given up on, or the undo of one, that Redis has not answered yet (see `send`). */
  unanswered: Unanswered | undefined;
}

/** A command of an acquire call that Redis has not answered yet (see `awaitAnswer`). */
interface Unanswered {
  /** Never settles if the client dropped the command when its connection closed. */
  readonly answer: Promise<unknown>;
  /** The backend's `connectionCloses` when it was sent. */
  readonly closes: number;
  /** The attempt whose grant, if it landed, the call has not seen: the command's, or the one it undoes. */
  readonly attempt: AttemptContext;
}

/**
 * `{ wait: undefined }` is "not given", as for every option: an options object shared with
 * `acquire` and spread in. A wait given is refused: tryAcquire never waits.
 */
function withoutUndefinedWait(options: unknown): unknown {
  if (typeof options !== 'object' || options === null || !Object.hasOwn(options, 'wait')) return options;
  const { wait, ...others } = options as { wait?: unknown };
  return wait === undefined ? others : options;
}
