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

  it('called again while it runs, resolves only once the first has given the locks up', async () => {
    await using server = await startRedis();
    const client = server.client();
    const locker = createLocker({ redis: client });
    const rival = createLocker({ redis: server.client() });
    const held = await locker.acquire('twice', { ttl: 60_000 });
    // On the locker's connection: the extend goes behind the sleep, and the release close() sends
    // waits for the extend's answer.
    const frozen = client.call('DEBUG', 'SLEEP', '0.3');
    const extending = held.extend().catch((error: Error) => error.name);
    const first = locker.close();
    await locker.close();
    expect(await rival.isLocked('twice')).toBe(false);
    expect(await extending).toBe('LockLostError');
    await Promise.all([first, frozen]);
    await rival.close();
  });
});
