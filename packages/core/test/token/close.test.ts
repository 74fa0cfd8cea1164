import { createLocker, LockerClosedError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';

describe('close()', () => {
  it('gives up the locks it holds, so others need not wait for their ttl', async () => {
    await using server = await startRedis();
    const locker = createLocker({ redis: server.client() });
    const rival = createLocker({ redis: server.client() });
    const outer = await locker.acquire('closing', { ttl: 60_000 });
    const plain = await locker.acquire('plain', { ttl: 60_000 });
    await locker.close();
    expect(await rival.isLocked('closing')).toBe(false);
    expect(await rival.isLocked('plain')).toBe(false);
    await outer.release();
    await plain.release();
    const next = await rival.acquire('closing', { wait: 0 });
    expect(next.fence).toBeGreaterThan(outer.fence);
    await expect(locker.acquire('closing')).rejects.toBeInstanceOf(LockerClosedError);
    await next.release();
    await rival.close();
  });
});
