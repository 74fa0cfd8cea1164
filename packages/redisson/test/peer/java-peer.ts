import { randomBytes, randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import * as lua from './scripts.js';

type Client = Redis | Cluster;

/** Java's IllegalMonitorStateException, as the peer reports it. */
export class IllegalMonitorStateError extends Error {}

/** A wake-up the peer's waiter received. */
export interface Wakeup {
  readonly channel: string;
  readonly message: string;
  readonly at: number;
}

/**
 * "A Java client with another UUID": Redisson's client side of the lock protocol written from
 * protocols/redisson.md, independent of the package. It builds names with its own helpers,
 * sends its own scripts with EVAL and waits as RedissonLock does: try, subscribe, retry on a
 * message (a semaphore permit) or after the returned TTL, unsubscribe.
 */
export class JavaPeer {
  readonly id = randomUUID();
  readonly wakeups: Wakeup[] = [];
  /** Per channel, as RedissonLockEntry: a semaphore (permits and queued waiters) and a subscription count. */
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly redis: Client,
    private readonly subscriber: Client,
    private readonly sharded = false,
  ) {
    const onMessage = (channel: string, message: string) => {
      this.wakeups.push({ channel, message, at: performance.now() });
      const entry = this.entries.get(channel);
      if (!entry) return;
      // LockPubSub: "0" releases one permit, "1" releases one per queued waiter.
      const permits = message === '1' ? Math.max(1, entry.queued.length) : 1;
      for (let i = 0; i < permits; i++) {
        const next = entry.queued.shift();
        if (next) next();
        else entry.permits += 1;
      }
    };
    subscriber.on(sharded ? 'smessage' : 'message', onMessage);
  }

  /** Whether a waiter of this peer is subscribed to `channel` (the SUBSCRIBE was answered). */
  subscribedTo(channel: string): boolean {
    return this.entries.get(channel)?.subscribed === true;
  }

  owner(thread: number): string {
    return `${this.id}:${thread}`;
  }

  // --- naming, as RedissonObject.prefixName / suffixName -----------------------------------
  static tagged(prefix: string, name: string): string {
    return name.indexOf('{') >= 0 ? `${prefix}:${name}` : `${prefix}:{${name}}`;
  }

  private latch(name: string): string {
    return `${JavaPeer.tagged('redisson_unlock_latch', name)}:${randomBytes(16).toString('hex')}`;
  }

  private get publish(): string {
    return this.sharded ? 'spublish' : 'publish';
  }

  private async unlockCall(
    name: string,
    script: string,
    keys: string[],
    args: (string | number)[],
  ): Promise<number> {
    const latch = this.latch(name);
    const latchMs = (3000 + 1000 + Math.floor(Math.random() * 1001)) * 4;
    const reply = (await this.redis.eval(script, keys.length + 1, ...keys, latch, ...args, latchMs)) as
      | number
      | null;
    await this.redis.del(latch);
    if (reply === null)
      throw new IllegalMonitorStateError(`attempt to unlock lock, not locked by current thread`);
    return reply;
  }

  // --- RLock ----------------------------------------------------------------------------------
  tryLockOnce(name: string, thread: number, lease = 30_000): Promise<number | null> {
    return this.redis.eval(lua.TRY_LOCK, 1, name, lease, this.owner(thread)) as Promise<number | null>;
  }

  /** `tryLock(wait, lease)`: true when acquired within `wait` ms. */
  tryLock(name: string, thread: number, wait: number, lease = 30_000): Promise<boolean> {
    return this.waitLoop(JavaPeer.tagged('redisson_lock__channel', name), wait, () =>
      this.tryLockOnce(name, thread, lease),
    );
  }

  unlock(name: string, thread: number, lease = 30_000): Promise<number> {
    const channel = JavaPeer.tagged('redisson_lock__channel', name);
    return this.unlockCall(name, lua.UNLOCK, [name, channel], ['0', lease, this.owner(thread), this.publish]);
  }

  async renew(name: string, thread: number): Promise<boolean> {
    const [renewed] = (await this.redis.eval(lua.RENEW, 1, name, 30_000, this.owner(thread))) as number[];
    return renewed === 1;
  }

  // --- RFencedLock ----------------------------------------------------------------------------
  async tryLockAndGetToken(name: string, thread: number): Promise<number | null> {
    const token = JavaPeer.tagged('redisson_lock_token', name);
    const [ttl, fence] = (await this.redis.eval(
      lua.FENCED_TRY_LOCK,
      2,
      name,
      token,
      30_000,
      this.owner(thread),
    )) as [number, number];
    return ttl === -1 ? fence : null;
  }

  // --- RFairLock ------------------------------------------------------------------------------
  private fairKeys(name: string): string[] {
    return [
      name,
      JavaPeer.tagged('redisson_lock_queue', name),
      JavaPeer.tagged('redisson_lock_timeout', name),
    ];
  }

  fairTryLockOnce(name: string, thread: number, wait = 300_000, now = Date.now()): Promise<number | null> {
    return this.redis.eval(
      lua.FAIR_TRY_LOCK,
      3,
      ...this.fairKeys(name),
      30_000,
      this.owner(thread),
      wait,
      now,
    ) as Promise<number | null>;
  }

  /** `tryLock(wait, -1)` on a fair lock: queued with `wait` as its allowance; acquireFailed on give-up. */
  async fairTryLock(name: string, thread: number, wait: number): Promise<boolean> {
    const channel = `${JavaPeer.tagged('redisson_lock__channel', name)}:${this.owner(thread)}`;
    const acquired = await this.waitLoop(channel, wait, () => this.fairTryLockOnce(name, thread, wait));
    if (!acquired) await this.fairAcquireFailed(name, thread, wait);
    return acquired;
  }

  async fairAcquireFailed(name: string, thread: number, wait: number): Promise<void> {
    const [, queue, zset] = this.fairKeys(name);
    await this.redis.eval(lua.FAIR_ACQUIRE_FAILED, 2, queue!, zset!, this.owner(thread), wait);
  }

  fairUnlock(name: string, thread: number): Promise<number> {
    const channel = JavaPeer.tagged('redisson_lock__channel', name);
    return this.unlockCall(
      name,
      lua.FAIR_UNLOCK,
      [...this.fairKeys(name), channel],
      ['0', 30_000, this.owner(thread), Date.now(), this.publish],
    );
  }

  // --- RReadWriteLock -------------------------------------------------------------------------
  private readPrefix(name: string, thread: number): string {
    const tagged = name.indexOf('{') >= 0 ? name : `{${name}}`;
    return `${tagged}:${this.owner(thread)}:rwlock_timeout`;
  }

  readTryLockOnce(name: string, thread: number): Promise<number | null> {
    const owner = this.owner(thread);
    return this.redis.eval(
      lua.READ_TRY_LOCK,
      2,
      name,
      this.readPrefix(name, thread),
      30_000,
      owner,
      `${owner}:write`,
    ) as Promise<number | null>;
  }

  writeTryLockOnce(name: string, thread: number): Promise<number | null> {
    return this.redis.eval(lua.WRITE_TRY_LOCK, 1, name, 30_000, `${this.owner(thread)}:write`) as Promise<
      number | null
    >;
  }

  readTryLock(name: string, thread: number, wait: number): Promise<boolean> {
    return this.waitLoop(JavaPeer.tagged('redisson_rwlock', name), wait, () =>
      this.readTryLockOnce(name, thread),
    );
  }

  writeTryLock(name: string, thread: number, wait: number): Promise<boolean> {
    return this.waitLoop(JavaPeer.tagged('redisson_rwlock', name), wait, () =>
      this.writeTryLockOnce(name, thread),
    );
  }

  readUnlock(name: string, thread: number): Promise<number> {
    const channel = JavaPeer.tagged('redisson_rwlock', name);
    const keyPrefix = name.indexOf('{') >= 0 ? name : `{${name}}`;
    return this.unlockCall(
      name,
      lua.READ_UNLOCK,
      [name, channel, this.readPrefix(name, thread), keyPrefix],
      ['0', this.owner(thread), this.publish],
    );
  }

  writeUnlock(name: string, thread: number): Promise<number> {
    const channel = JavaPeer.tagged('redisson_rwlock', name);
    return this.unlockCall(
      name,
      lua.WRITE_UNLOCK,
      [name, channel],
      ['1', 30_000, `${this.owner(thread)}:write`, this.publish],
    );
  }

  // --- waiting, as RedissonLock.tryLock(waitTime, leaseTime) ---------------------------------
  private async waitLoop(
    channel: string,
    wait: number,
    attempt: () => Promise<number | null>,
  ): Promise<boolean> {
    const deadline = performance.now() + wait;
    if ((await attempt()) === null) return true;
    const entry = await this.subscribe(channel);
    try {
      for (;;) {
        const ttl = await attempt();
        if (ttl === null) return true;
        const remaining = deadline - performance.now();
        if (remaining <= 0) return false;
        await this.tryAcquirePermit(entry, ttl >= 0 ? Math.min(ttl, remaining) : remaining);
      }
    } finally {
      await this.unsubscribe(channel, entry);
    }
  }

  private async subscribe(channel: string): Promise<Entry> {
    let entry = this.entries.get(channel);
    if (!entry) {
      const created: Entry = { permits: 0, queued: [], refs: 0, ready: Promise.resolve(), subscribed: false };
      this.entries.set(channel, created);
      created.ready = (
        this.sharded ? (this.subscriber as Redis).ssubscribe(channel) : this.subscriber.subscribe(channel)
      ).then(() => {
        created.subscribed = true;
      });
      entry = created;
    }
    entry.refs += 1;
    await entry.ready;
    return entry;
  }

  private async unsubscribe(channel: string, entry: Entry): Promise<void> {
    entry.refs -= 1;
    if (entry.refs > 0) return;
    this.entries.delete(channel);
    await (this.sharded
      ? (this.subscriber as Redis).sunsubscribe(channel)
      : this.subscriber.unsubscribe(channel));
  }

  /** Semaphore.tryAcquire(ms): a permit, or a wake-up from a message, or the timeout. */
  private tryAcquirePermit(entry: Entry, ms: number): Promise<void> {
    if (entry.permits > 0) {
      entry.permits -= 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const at = entry.queued.indexOf(wake);
        if (at >= 0) entry.queued.splice(at, 1);
        resolve();
      }, ms);
      entry.queued.push(wake);
    });
  }
}

interface Entry {
  permits: number;
  readonly queued: (() => void)[];
  refs: number;
  ready: Promise<void>;
  subscribed: boolean;
}
