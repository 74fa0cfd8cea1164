import { checkFunction, forcePubSub, newChain, runWithChain } from '@lock/core';
import { ClientCore } from './client.js';
import { RFairLock, RFencedLock, RLock, RReadWriteLock } from './locks.js';
import { checkOptions, type RedissonOptions } from './options.js';

/** A Redisson-compatible client: the lock objects of one client id. */
export interface Redisson {
  /** This client's id, the first half of every owner field it writes (a lowercase UUID, new per client). */
  readonly id: string;
  getLock(name: string): RLock;
  getFairLock(name: string): RFairLock;
  getReadWriteLock(name: string): RReadWriteLock;
  getFencedLock(name: string): RFencedLock;
  /**
   * Runs `fn` as a new "thread": every lock call inside it, through every await and in every task
   * it starts, acts as one new thread id, as code on one Java thread does. Call it per request or
   * job, never around a server: everything inside is one thread, and re-enters its locks. A `run`
   * inside another is a thread of its own, as a Java thread started by another is. Its thread
   * id is 2^52 or more, a range an explicit `threadId` is refused in, so the two never meet.
   * Anything but a function is refused with `InvalidOptionError`.
   */
  run<T>(fn: () => T): T;
  /** Stops renewal and waiting, releases the holds it still has, and closes its own subscriber connections. */
  shutdown(): Promise<void>;
}

/** Creates a client that locks the same keys, with the same bytes, as Redisson 3.x/4.x. */
export function createRedisson(options: RedissonOptions): Redisson {
  const checked = checkOptions(options);
  const client = new ClientCore(checked);
  forcePubSub(checked.redis, checked.pubSub ?? 'auto');
  return {
    id: client.id,
    getLock: (name) => new RLock(client, name),
    getFairLock: (name) => new RFairLock(client, name),
    getReadWriteLock: (name) => new RReadWriteLock(client, name),
    getFencedLock: (name) => new RFencedLock(client, name),
    run: (fn) => {
      // Checked here: core would fail with a bare TypeError, after numbering a chain for nothing.
      checkFunction(fn, 'fn', 'a function to run as a new thread');
      return runWithChain(newChain(), fn);
    },
    shutdown: () => client.close(),
  };
}
