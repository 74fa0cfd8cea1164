import { createLocker, fencedGet, fencedSet, LockLostError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { startHolder } from '../faults/support/processes.js';
import { controlRenewals } from '../support/renewals.js';

describe('losing a lock', () => {
  it('a server frozen past the ttl: signal aborts by the deadline, another client gets the lock, no resurrection', async () => {
    await using server = await startRedis();
    const holderRedis = server.client({ commandTimeout: 2_000, maxRetriesPerRequest: 0 });
    const holder = createLocker({ redis: holderRedis, ttl: 600 });
    const rival = createLocker({ redis: server.client() });
    const lock = await holder.acquire('frozen');
    const aborted = new Promise<number>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
    );
    server.pause();
    const abortedAt = await aborted;
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    // The loss is declared from the holder's own clock ('expired': no renewal had failed yet, and
    // a frozen server answers nothing), once its validity ends: a timer's lag aside, not later.
    expect((lock.signal.reason as LockLostError).reason).toBe('expired');
    expect(abortedAt).toBeGreaterThanOrEqual(lock.validUntil);
    expect(abortedAt).toBeLessThan(lock.validUntil + 2_000);
    await new Promise((resolve) => setTimeout(resolve, 700));
    server.resume();
    const next = await rival.acquire('frozen', { ttl: 30_000, wait: 5_000 });
    expect(next.fence).toBeGreaterThan(lock.fence);
    // What the holder sent while frozen ran before a control lock's renewals, sent after it on the
    // same connection; two of them outlast any renewal a timer could still send.
    expect(await controlRenewals(holder, 2)).toEqual([1, 1]);
    const seen = await rival.inspect('frozen');
    expect(seen.owner).toBe(next.owner);
    expect(seen.holds).toBe(1);
    // Its 30 s lease untouched: nothing reset it to the holder's 600 ms.
    expect(seen.ttl).toBeGreaterThan(20_000);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
    await lock.release();
    expect((await rival.inspect('frozen')).owner).toBe(next.owner);
    await next.release();
    await holder.close();
    await rival.close();
  });

  it('a holder process paused (SIGSTOP) past its ttl has its late write refused by the fenced resource', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const locker = createLocker({ redis });
    const holder = startHolder({ url: server.url, key: 'account', ttl: 600, wait: 5_000 });
    try {
      const held = JSON.parse(await holder.line((line) => line.startsWith('{'))) as { fence: number };
      holder.child.kill('SIGSTOP');
      // Frozen, its watchdog renews nothing: the key expires and another owner takes it.
      const fast = await locker.acquire('account', { ttl: 5_000, wait: 5_000 });
      expect(fast.fence).toBeGreaterThan(held.fence);
      expect(await fencedSet(redis, 'account:balance', fast.fence, '100')).toBe(true);
      holder.child.stdin?.write('write account:balance 0\n');
      holder.child.kill('SIGCONT');
      expect(await holder.line((line) => line.startsWith('wrote'))).toBe('wrote false');
      expect(await fencedSet(redis, 'account:balance', fast.fence, '150')).toBe(true);
      expect(await fencedGet(redis, 'account:balance')).toEqual({ value: '150', fence: fast.fence });
      await fast.release();
      expect(await holder.finish()).toBe(0);
    } finally {
      holder.child.kill('SIGKILL');
      await locker.close();
    }
  });
  it('a handle reads released once its lease has run out by its clock, before the loss timer has run', async () => {
    await using server = await startRedis();
    const locker = createLocker({ redis: server.client() });
    const lock = await locker.acquire('blocked', { ttl: 50 });
    // This process blocked past the lease: the timer that declares the loss has not run yet.
    const until = performance.now() + 100;
    while (performance.now() < until);
    expect(lock.released).toBe(true);
    expect(lock.signal.reason).toMatchObject({ reason: 'expired' });
    await locker.close();
  });
});
