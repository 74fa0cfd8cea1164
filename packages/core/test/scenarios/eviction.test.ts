import { createLocker } from '@lock/core';
import { assertHistory, checkHistory, HistoryRecorder, type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

const FILLER = 'x'.repeat(100_000);

/** Writes made at most by `fill`: 20 MB, far past the 3 MB limit. */
const MAX_WRITES = 200;

/**
 * Writes 100 kB TTL-less values until the server refuses one or the lock is gone (at most
 * `MAX_WRITES`), then deletes them; returns how many were written and the refusal, if any.
 */
async function fill(redis: Redis, lockKey: string): Promise<{ written: number; refusal: Error | undefined }> {
  let written = 0;
  let refusal: Error | undefined;
  try {
    for (; written < MAX_WRITES && (await redis.exists(lockKey)) === 1; written++) {
      await redis.set(`filler:${written}`, FILLER);
    }
  } catch (error) {
    refusal = error as Error;
  }
  for (let i = 0; i < written; i++) await redis.del(`filler:${i}`);
  return { written, refusal };
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
  const { written, refusal } = await fill(redis, '{lock:s29}');
  const survived = (await redis.exists('{lock:s29}')) === 1;
  const b = createLocker({ redis: server.client() });
  const lockB = await b.tryAcquire('s29', { ttl: 60_000 });
  if (lockB) recorderB.acquired(lockB);
  await b.close();
  await a.close();
  return { survived, written, refusal, lockB, events: [...recorderA.events, ...recorderB.events] };
}

describe('S29: memory filled to maxmemory while a lock is held', () => {
  it('volatile-lru (✗-expected): the lock, the only key with a TTL, is evicted; B acquires and the overlap is detected', async () => {
    const { survived, lockB, events, refusal } = await fillWhileHeld('volatile-lru');
    expect(survived).toBe(false);
    // Once the lock is evicted nothing else may be: the next write may be refused, and then only for memory.
    expect([undefined, 'OOM']).toContain(refusal?.message.slice(0, 3));
    expect(lockB).not.toBeNull();
    expect(checkHistory(events).overlaps).toHaveLength(1);
  });

  it('allkeys-lru (✗-expected): the lock is evicted like any key', async () => {
    const { survived, refusal } = await fillWhileHeld('allkeys-lru');
    expect(survived).toBe(false);
    // Every key may be evicted: no write is refused.
    expect(refusal).toBeUndefined();
  });

  it('noeviction: writes are refused instead, the lock survives and B is refused', async () => {
    const { survived, lockB, events, written, refusal } = await fillWhileHeld('noeviction');
    // The server refused a write once memory was full, well before the filler ran out.
    expect(refusal?.message ?? 'no write refused').toMatch(
      /^OOM command not allowed when used memory > 'maxmemory'/,
    );
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(MAX_WRITES);
    expect(survived).toBe(true);
    expect(lockB).toBeNull();
    assertHistory(events, { name: 'S29-noeviction' });
  });
});
