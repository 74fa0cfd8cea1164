import { randomUUID } from 'node:crypto';
import {
  createEngine,
  type Lock,
  type Locker,
  NotOwnerError,
  type RedisClient,
  singleBackend,
} from '@lock/core';
import { FairLockProtocol } from './fair/protocol.js';
import { FencedLockProtocol } from './fenced/protocol.js';
import { WATCHDOG_TIMEOUT } from './hash-protocol.js';
import type { LockKind, RedissonProtocol } from './kinds.js';
import { RLockProtocol } from './lock/protocol.js';
import type { RedissonOptions } from './options.js';
import { ReadLockProtocol, WriteLockProtocol } from './rwlock/protocol.js';
import { Threads } from './thread.js';

/** One acquisition request as the lock objects hand it over. */
export interface AcquireRequest {
  readonly threadId?: number;
  /** Fixed lease in ms; none means the watchdog lease, renewed. */
  readonly lease?: number;
  readonly wait: number;
  readonly signal?: AbortSignal;
}

/**
 * What one Redisson client shares between its lock objects: its id, one engine per lock kind
 * (waiting, watchdog and events are the engine's), the handles of the holds it has taken, and
 * which thread each call acts as.
 */
export class ClientCore {
  readonly id = randomUUID();
  readonly redis: RedisClient;
  readonly prefix: string;
  readonly watchdogTimeout: number;
  readonly protocols: Readonly<Record<LockKind, RedissonProtocol>>;
  readonly threads = new Threads();
  private readonly engines = new Map<LockKind, Locker>();
  private readonly handles = new Map<string, Lock[]>();

  constructor(private readonly options: RedissonOptions) {
    this.redis = options.redis;
    this.prefix = options.prefix ?? '';
    this.watchdogTimeout = options.lockWatchdogTimeout ?? WATCHDOG_TIMEOUT;
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

  /** Takes one hold of `name` as the call's thread. */
  async acquire(kind: LockKind, name: string, request: AcquireRequest): Promise<Lock> {
    const { thread, unchained } = this.threads.forAcquire(request.threadId);
    const owner = this.owner(thread);
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
    if (unchained) this.threads.adopt(lockKey(kind, name), thread);
    return lock;
  }

  /** Gives up one hold as the call's thread; throws `NotOwnerError` as Java throws IllegalMonitorStateException. */
  async unlock(kind: LockKind, name: string, threadId: number | undefined): Promise<void> {
    const thread = this.threads.current(lockKey(kind, name), threadId);
    const owner = this.owner(thread);
    const key = holdKey(kind, name, owner);
    const stack = this.handles.get(key);
    const handle = stack?.pop();
    if (stack?.length === 0) {
      this.handles.delete(key);
      this.threads.release(lockKey(kind, name), thread);
    }
    // The handle answers what the script did (a lost hold answers not-owner) and stops its renewal.
    const result = handle
      ? await handle.release()
      : await this.protocols[kind].unlock(this.redis, this.resource(name), owner, this.watchdogTimeout);
    if (result === 'not-owner') throw new NotOwnerError(name, owner);
  }

  /** The owner a non-acquiring call on `name` acts as. */
  currentOwner(kind: LockKind, name: string, threadId: number | undefined): string {
    return this.owner(this.threads.current(lockKey(kind, name), threadId));
  }

  async close(): Promise<void> {
    await Promise.all([...this.engines.values()].map((engine) => engine.close()));
    this.engines.clear();
  }

  private engine(kind: LockKind): Locker {
    let engine = this.engines.get(kind);
    if (!engine) {
      const { replication, retry } = this.options;
      const backend = singleBackend(
        this.redis,
        this.protocols[kind],
        replication === undefined ? {} : { replication },
      );
      engine = createEngine(backend, {
        prefix: this.prefix,
        ttl: this.watchdogTimeout,
        id: this.id,
        ...(retry === undefined ? {} : { retry }),
      });
      this.engines.set(kind, engine);
    }
    return engine;
  }
}

const lockKey = (kind: LockKind, name: string): string => `${kind}\n${name}`;
const holdKey = (kind: LockKind, name: string, owner: string): string => `${kind}\n${name}\n${owner}`;
