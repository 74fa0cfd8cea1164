import { createLocker } from '@lock/core';
import { assertHistory, checkHistory, HistoryRecorder, type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

const FILLER = 'x'.repeat(100_000);

/**
 * Writes 100 kB TTL-less values until the server refuses one (OOM) or the lock is gone, then
 * deletes them; returns how many were written.
 */
async function fill(redis: Redis, lockKey: string): Promise<number> {
  let written = 0;
  try {
    for (; written < 200 && (await redis.exists(lockKey)) === 1; written++) {
      await redis.set(`filler:${written}`, FILLER);
    }
  } catch (error) {
    expect((error as Error).message).toMatch(/^OOM/);
  }
  for (let i = 0; i < written; i++) await redis.del(`filler:${i}`);
  return written;
}

/** A holds a lock, memory is filled to the limit, then freed; B tries the lock. */
async function fillWhileHeld(policy: string) {
  await using server: RedisServer = await startRedis({
    config: { maxmemory: '3mb', 'maxmemory-policy': policy },
  });
  const redis = server.client();
  const a = createLocker({ redis });
  const recorderA = new HistoryRecorder('A');
  const recorderB = new HistoryRecorder('B');
  const lockA = await a.acquire('s29', { ttl: 60_000, wait: 0 });
  recorderA.acquired(lockA);
  const written = await fill(redis, '{lock:s29}');
  const survived = (await redis.exists('{lock:s29}')) === 1;
  const b = createLocker({ redis: server.client() });
  const lockB = await b.tryAcquire('s29', { ttl: 60_000 });
  if (lockB) recorderB.acquired(lockB);
  await b.close();
  await a.close();
  return { survived, written, lockB, events: [...recorderA.events, ...recorderB.events] };
}

describe('S29: memory filled to maxmemory while a lock is held', () => {
  it('volatile-lru (✗-expected): the lock, the only key with a TTL, is evicted; B acquires and the overlap is detected', async () => {
    const { survived, lockB, events } = await fillWhileHeld('volatile-lru');
    expect(survived).toBe(false);
    expect(lockB).not.toBeNull();
    expect(checkHistory(events).overlaps).toHaveLength(1);
  });

  it('allkeys-lru (✗-expected): the lock is evicted like any key', async () => {
    const { survived } = await fillWhileHeld('allkeys-lru');
    expect(survived).toBe(false);
  });

  it('noeviction: writes are refused instead, the lock survives and B is refused', async () => {
    const { survived, lockB, events, written } = await fillWhileHeld('noeviction');
    expect(written).toBeGreaterThan(0);
    expect(survived).toBe(true);
    expect(lockB).toBeNull();
    assertHistory(events, { name: 'S29-noeviction' });
  });
});
