/** A request handler of the Node service: sells under @lock/thinkphp's Lock, the PHP class's twin. */
import { setTimeout as sleep } from 'node:timers/promises';
import { Lock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';

/** One sale, made under the lock: its times on CLOCK_MONOTONIC (ms), and the counter it wrote. */
export interface Sale {
  readonly start: number;
  readonly end: number;
  readonly counter: number;
}

export interface SellerOptions {
  readonly redis: Redis;
  /** The lock key, byte for byte the one the PHP service locks. */
  readonly key: string;
  /** The sold counter every sale reads, then writes back plus one. */
  readonly counter: string;
  /** LOCK_EXPIRE, seconds. */
  readonly expire: number;
  readonly sales: number;
  /** How long one sale may wait for the lock, seconds. */
  readonly patience: number;
}

/** CLOCK_MONOTONIC in ms: the clock PHP's hrtime() reads, so both sides' times compare. */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Makes `sales` sales one after another; rejects when the lock stays busy past `patience`. */
export async function sellFromNode(name: string, options: SellerOptions): Promise<Sale[]> {
  const { redis, key, counter, expire, sales, patience } = options;
  // PHP's holds last their whole lease (its unlock() frees nothing before), so waiting is
  // lock()'s own retries: `retryMax` attempts `sleep` seconds apart.
  const sleepS = 0.05;
  const lock = new Lock(key, { redis, expire, sleep: sleepS, retryMax: Math.ceil(patience / sleepS) });
  const made: Sale[] = [];
  while (made.length < sales) {
    await sleep(20 + Math.random() * 20); // the next request arrives
    if (!(await lock.lock())) throw new Error(`${name}: ${key} still busy after ${patience} s`);
    try {
      const start = monotonicMs();
      const seen = Number((await redis.get(counter)) ?? 0);
      await sleep(50); // the slow part of a sale
      await redis.set(counter, seen + 1);
      made.push({ start, end: monotonicMs(), counter: seen + 1 });
    } finally {
      await lock.unlock();
    }
  }
  return made;
}
