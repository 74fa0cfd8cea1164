import { createLocker, LockLostError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { controlRenewals } from '../support/renewals.js';
import { startHolder } from './support/processes.js';
import { blockEventLoop } from './support/stats.js';

it('S7: a holder whose event loop was blocked past its lease finds it lost before writing, renews nothing, and leaves the new holder alone', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const holder = createLocker({ redis, ttl: 600 });
  const lock = await holder.acquire('blocked');
  // Polls every 50 ms: it takes the key soon after it expires, well inside the block below.
  const rival = startHolder({
    url: server.url,
    key: 'blocked',
    ttl: 30_000,
    wait: 20_000,
    retry: { base: 50, max: 50, jitter: 0 },
  });
  try {
    // The watchdog keeps the lock while the rival starts (about a second), so it waits.
    await rival.line((line) => line === 'ready');
    expect(lock.signal.aborted).toBe(false);

    // 2.4 s = 4 leases: no renewal can run, the key expires and the rival (another
    // process, so not blocked) takes it meanwhile.
    blockEventLoop(2_400);
    const unblockedAt = process.hrtime.bigint();
    // Still inside the same synchronous run: no timer or reply has been processed yet, so
    // this is the check a holder makes before its next write.
    // The signal is read first: it must not wait for a timer to tell the holder it lost.
    expect(lock.signal.aborted).toBe(true);
    expect((lock.signal.reason as LockLostError).reason).toBe('expired');
    let write = 'not attempted';
    expect(() => {
      lock.assertHeld();
      write = 'attempted';
    }).toThrow(LockLostError);
    expect(write).toBe('not attempted');

    const taken = JSON.parse(await rival.line((line) => line.startsWith('{'))) as {
      owner: string;
      fence: number;
      at: string;
    };
    // The rival took the lock while this holder was blocked, not after.
    expect(BigInt(taken.at)).toBeLessThan(unblockedAt);
    expect(taken.fence).toBeGreaterThan(lock.fence);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    // Every round from now on is a control lock's alone (same ttl): the lost lock, still
    // renewed, would join one of them or send its own.
    expect(await controlRenewals(holder, 2)).toEqual([1, 1]);
    const seen = await holder.inspect('blocked');
    expect(seen.owner).toBe(taken.owner);
    expect(seen.holds).toBe(1);
    // The rival's 30 s lease is untouched: nothing reset it to the holder's 600 ms.
    expect(seen.ttl).toBeGreaterThan(20_000);
    await lock.release();
    expect((await holder.inspect('blocked')).owner).toBe(taken.owner);
    expect(await rival.finish()).toBe(0);
    expect(await holder.isLocked('blocked')).toBe(false);
  } finally {
    rival.child.kill('SIGKILL');
    await holder.close();
  }
});
