import { randomUUID } from 'node:crypto';
import {
  bounded,
  createEngine,
  DEFAULT_COMMAND_TIMEOUT,
  type Lock,
  type Locker,
  LockerClosedError,
  NotOwnerError,
  type RedisClient,
  type ReplicationOptions,
  type RetryOptions,
  singleBackend,
} from '@lock/core';
import { FairLockProtocol } from './fair/protocol.js';
import { FencedLockProtocol } from './fenced/protocol.js';
import { WATCHDOG_TIMEOUT } from './hash-protocol.js';
import type { LockKind, RedissonProtocol } from './kinds.js';
import { RLockProtocol } from './lock/protocol.js';
import type { RedissonOptions } from './options.js';
import { ReadLockProtocol, WriteLockProtocol } from './rwlock/protocol.js';

/** One acquisition request as the lock objects hand it over. */
export interface AcquireRequest {
  readonly thread: number;
  /** Fixed lease in ms; none means the watchdog lease, renewed. */
  readonly lease?: number;
  readonly wait: number;
  readonly signal?: AbortSignal;
}

/**
 * What one Redisson client shares between its lock objects: its id, one engine per lock kind
 * (waiting, watchdog and events are the engine's), and the handles of the holds it has taken.
 * Release messages of every kind arrive on one subscriber connection: the one every locker on
 * the ioredis client shares (see `singleBackend`'s `subscriber`).
 */
export class ClientCore {
  readonly id = randomUUID();
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly watchdogTimeout: number;
  readonly commandTimeout: number;
  readonly protocols: Readonly<Record<LockKind, RedissonProtocol>>;
  private readonly engines = new Map<LockKind, Locker>();
  private readonly handles = new Map<string, Lock[]>();
  /**
   * Takes a handle's `forgetLost` listener off its signal once it is unlocked: a hold's handles
   * share one signal, so every re-entry of a long hold would leave one there until the hold ends.
   */
  private readonly unwatch = new WeakMap<Lock, () => void>();
  private closed = false;

  /** Read by the engines made at each kind's first lock. */
  private readonly retry: RetryOptions | undefined;
  private readonly replication: ReplicationOptions | undefined;

  /** `options` as `checkOptions` answers them: a copy the caller cannot change any more. */
  constructor(options: RedissonOptions) {
    this.redis = options.redis;
    this.prefix = options.prefix ?? '';
    this.watchdogTimeout = options.lockWatchdogTimeout ?? WATCHDOG_TIMEOUT;
    this.commandTimeout = options.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT;
    this.retry = options.retry;
    this.replication = options.replication;
    this.protocols = {
      lock: new RLockProtocol(),
      fenced: new FencedLockProtocol(),
      fair: new FairLockProtocol(
        options.fairLockWaitTimeout === undefined ? {} : { waitTimeout: options.fairLockWaitTimeout },
      ),
      read: new ReadLockProtocol(),
      write: new WriteLockProtocol(),
    };
  }

  resource(name: string): string {
    return this.prefix + name;
  }

  owner(thread: number): string {
    return `${this.id}:${thread}`;
  }

  /** Takes one hold of `name` as `request.thread`. */
  async acquire(kind: LockKind, name: string, request: AcquireRequest): Promise<Lock> {
    const owner = this.owner(request.thread);
    const lock = await this.engine(kind).acquire(name, {
      owner,
      wait: request.wait,
      ...(request.lease === undefined ? {} : { ttl: request.lease }),
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    });
    const key = holdKey(kind, name, owner);
    const stack = this.handles.get(key) ?? [];
    stack.push(lock);
    this.handles.set(key, stack);
    // A hold left to its lease is never unlocked ("lock for 10 s" as a dedupe): kept, every such
    // call would stay here for the life of the process.
    const forget = () => this.forgetLost(key, lock);
    lock.signal.addEventListener('abort', forget, { once: true });
    this.unwatch.set(lock, () => lock.signal.removeEventListener('abort', forget));
    return lock;
  }

  /** Drops a hold lost before its unlock, which then throws `NotOwnerError` as Java's would. */
  private forgetLost(key: string, lock: Lock): void {
    // Lost to shutdown(), which released it: an unlock after that answers what that release did.
    if (this.closed) return;
    const stack = this.handles.get(key)?.filter((other) => other !== lock) ?? [];
    if (stack.length === 0) this.handles.delete(key);
    else this.handles.set(key, stack);
  }

  /**
   * Gives up one hold as `thread`; throws `NotOwnerError` as Java throws IllegalMonitorStateException.
   * Only a hold this client took for `thread` is given up, through its handle: without one the
   * thread holds nothing here, and nothing is sent that could release a hold it did not take.
   */
  async unlock(kind: LockKind, name: string, thread: number): Promise<void> {
    const owner = this.owner(thread);
    const key = holdKey(kind, name, owner);
    const stack = this.handles.get(key);
    const handle = stack?.pop();
    if (!stack || !handle) throw new NotOwnerError(name, owner);
    if (stack.length === 0) this.handles.delete(key);
    let result: Awaited<ReturnType<Lock['release']>>;
    try {
      // The handle answers what the script did (a lost hold answers not-owner) and stops its renewal.
      result = await handle.release();
    } catch (error) {
      // Redis did not answer: the hold may still be there, so a retried unlock() must find it.
      this.handles.set(key, [...(this.handles.get(key) ?? []), handle]);
      throw error;
    }
    this.unwatch.get(handle)?.();
    if (result === 'not-owner') throw new NotOwnerError(name, owner);
  }

  /** A call this package sends itself, bounded by `commandTimeout`. */
  call<T>(name: string, operation: string, pending: Promise<T>): Promise<T> {
    return bounded(pending, this.commandTimeout, name, operation);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.engines.values()].map((engine) => engine.close()));
    this.engines.clear();
  }

  private engine(kind: LockKind): Locker {
    let engine = this.engines.get(kind);
    if (!engine) {
      if (this.closed) throw new LockerClosedError();
      const { replication, retry } = this;
      const backend = singleBackend(
        this.redis,
        this.protocols[kind],
        replication === undefined ? {} : { replication },
      );
      try {
        engine = createEngine(backend, {
          prefix: this.prefix,
          ttl: this.watchdogTimeout,
          id: this.id,
          commandTimeout: this.commandTimeout,
          ...(retry === undefined ? {} : { retry }),
        });
      } catch (error) {
        // Nothing was sent: closing only gives up the client's shared listener and connection state.
        void backend.close();
        throw error;
      }
      this.engines.set(kind, engine);
    }
    return engine;
  }
}

/**
 * Where a thread's holds of one lock object wait for their unlocks. A fenced lock is an RLock to
 * Java, same field and same unlock script (RFencedLock extends RedissonLock), so either object
 * unlocks what the other locked; a fair lock's unlock wakes its queue instead, and stays apart.
 */
const holdKey = (kind: LockKind, name: string, owner: string): string =>
  `${kind === 'fenced' ? 'lock' : kind}\n${name}\n${owner}`;
