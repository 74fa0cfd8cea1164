import type { Redis } from 'ioredis';
import type { Subject } from '../subjects.js';

export interface KeysLeftResult {
  /** Distinct keys locked and released once each. */
  readonly locked: number;
  /** Keys in Redis right after, summed over servers. */
  readonly keys: number;
  /** Of those, keys without a TTL: they stay forever. */
  readonly persistent: number;
}

/**
 * Locks and releases `keys` distinct keys once each (`loops` at a time, as a lock per order id
 * would), then counts what the subject left in Redis. The servers must be empty before.
 */
export async function keysLeftSlice(
  subject: Subject,
  servers: readonly Redis[],
  { keys, loops }: { keys: number; loops: number },
): Promise<KeysLeftResult> {
  let next = 0;
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (next < keys) {
        const release = await subject.acquire(`bench:order:${next++}`, 10_000);
        await release();
      }
    }),
  );
  let total = 0;
  let expiring = 0;
  for (const redis of servers) {
    for (const match of (await redis.info('keyspace')).matchAll(/^db\d+:keys=(\d+),expires=(\d+)/gm)) {
      total += Number(match[1]);
      expiring += Number(match[2]);
    }
  }
  return { locked: keys, keys: total, persistent: total - expiring };
}
