/**
 * The behaviour every Locker must have, whatever its protocol and topology. Protocol packages
 * call `describeLockerContract` with a setup building their locker on real Redis.
 */
import { randomUUID } from 'node:crypto';
import {
  AcquireTimeoutError,
  type EngineOptions,
  InvalidKeyError,
  InvalidOptionError,
  type Lock,
  LockBusyError,
  type Locker,
  LockerClosedError,
  LockLostError,
  NotOwnerError,
  type RedisClient,
} from '@lock/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockEventLoop } from '../faults/support/stats.js';
import { lease } from '../support/deployments.js';
import { renewals } from '../support/renewals.js';
import { keysWithoutTtl, waiterSubscribed } from './keys.js';

/** What a contract run needs. */
export interface ContractTarget {
  /** The locker under test. */
  readonly locker: Locker;
  /** A second locker on the same Redis, standing for another process. */
  readonly other: Locker;
  /** Makes one more locker with these engine options (for ttl/retry variants); closed by the target's `close`. */
  readonly make: (options: EngineOptions) => Locker;
  /** Clients whose keyspaces the lock keys live in, scanned for keys without a TTL. */
  readonly clients: readonly RedisClient[];
  /** Keys that may legitimately lack a TTL (fence counters). */
  readonly counters: RegExp;
  /**
   * Granularity of the ttls the format takes, in ms: the short leases below are rounded up to it
   * (1_000 for `legacyProtocol({ unit: 's' })`, whose "ttl must then be whole seconds":
   * src/protocols/legacy/README.md). Default: 1.
   */
  readonly ttlStep?: number;
  /**
   * Ms by which the key's TTL exceeds the ttl asked for: 1_000 for `legacyProtocol({ unit: 's' })`,
   * whose key lives `ttl/1000 + 1` seconds (src/protocols/legacy/README.md, "What is written"), so
   * `inspect().ttl` and `LockBusyError.remaining` may read up to that much more. Default: 0.
   */
  readonly ttlOverhang?: number;
  close(): Promise<void>;
}

export function describeLockerContract(name: string, setup: () => Promise<ContractTarget>): void {
  describe(`Locker contract: ${name}`, () => {
    let target: ContractTarget;
    const key = () => `contract:${randomUUID()}`;
    /** A short lease of about `ms`, as the format can express it. */
    const short = (ms: number) => lease({ ttlStep: target.ttlStep ?? 1 }, ms);

    beforeAll(async () => {
      target = await setup();
    });

    afterAll(async () => {
      const untimed = (await Promise.all(target.clients.map(keysWithoutTtl))).flat();
      await target.close();
      expect(untimed.filter((k) => !target.counters.test(k))).toEqual([]);
    });

    it('acquires, reports the holder, and releases idempotently', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: 5_000 });
      expect(lock.key).toBe(k);
      expect(lock.fence).toBeGreaterThan(0);
      expect(lock.holds).toBe(1);
      const seen = await target.other.inspect(k);
      expect(seen.held).toBe(true);
      expect(seen.ttl).toBeGreaterThan(0);
      expect(seen.ttl).toBeLessThanOrEqual(5_000 + (target.ttlOverhang ?? 0));
      expect(lock.remaining()).toBeGreaterThan(0);
      expect(lock.remaining()).toBeLessThanOrEqual(5_000);
      await lock.release();
      expect(lock.remaining()).toBe(0);
      await lock.release();
      expect(lock.released).toBe(true);
      expect(await target.other.isLocked(k)).toBe(false);
    });

    it('refuses a busy lock: tryAcquire answers null, wait 0 throws LockBusyError with the remaining ttl', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: 5_000 });
      expect(await target.other.tryAcquire(k)).toBeNull();
      const error = await target.other.acquire(k, { wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as LockBusyError).remaining).toBeGreaterThan(0);
      expect((error as LockBusyError).remaining).toBeLessThanOrEqual(5_000 + (target.ttlOverhang ?? 0));
      await lock.release();
    });

    it('times out with AcquireTimeoutError naming attempts and the wait', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: 10_000 });
      const error = await target.other.acquire(k, { wait: 150 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AcquireTimeoutError);
      expect((error as AcquireTimeoutError).attempts).toBeGreaterThanOrEqual(2);
      expect((error as AcquireTimeoutError).waited).toBeGreaterThanOrEqual(150);
      await lock.release();
    });

    it('wakes a waiter through the release message, not by polling', async () => {
      const k = key();
      const slowPoller = target.make({ retry: { base: 60_000, max: 60_000, jitter: 0 } });
      const lock = await target.locker.acquire(k, { ttl: 20_000 });
      const waiting = slowPoller.acquire(k, { wait: 15_000 });
      await waiterSubscribed(target.clients, k);
      await lock.release();
      const next = await waiting;
      expect(next.fence).toBeGreaterThan(lock.fence);
      await next.release();
    });

    it('hands out strictly increasing fences across owners', async () => {
      const k = key();
      const fences: number[] = [];
      for (const locker of [target.locker, target.other, target.locker, target.other]) {
        const lock = await locker.acquire(k, { ttl: 5_000 });
        fences.push(lock.fence);
        await lock.release();
      }
      expect(fences).toEqual([...fences].sort((a, b) => a - b));
      expect(new Set(fences).size).toBe(fences.length);
    });

    it('re-enters inside a using() critical section and makes a concurrent task wait', async () => {
      const k = key();
      const order: string[] = [];
      let held!: () => void;
      const isHeld = new Promise<void>((resolve) => {
        held = resolve;
      });
      let finish!: () => void;
      const mayFinish = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const outer = target.locker.using(k, { ttl: 5_000 }, async (outerLock) => {
        await target.locker.using(k, { ttl: 5_000, wait: 0 }, async (inner) => {
          expect(inner.holds).toBe(2);
          expect(inner.fence).toBe(outerLock.fence);
          expect((await target.other.inspect(k)).holds).toBe(2);
        });
        expect(await target.other.isLocked(k)).toBe(true);
        held();
        await mayFinish;
        order.push('outer done');
      });
      await isHeld;
      const concurrent = target.locker.using(k, { wait: 5_000 }, () => {
        order.push('concurrent');
      });
      await waiterSubscribed(target.clients, k);
      finish();
      await Promise.all([outer, concurrent]);
      expect(order).toEqual(['outer done', 'concurrent']);
      expect(await target.other.isLocked(k)).toBe(false);
    });

    it('always releases in using(), and never masks the callback error', async () => {
      const k = key();
      const failure = new Error('the user error');
      await expect(target.locker.using(k, { ttl: 5_000 }, async () => Promise.reject(failure))).rejects.toBe(
        failure,
      );
      expect(await target.other.isLocked(k)).toBe(false);
      expect(await target.locker.using(k, () => 42)).toBe(42);
      expect(await target.other.isLocked(k)).toBe(false);
    });

    it('supports `await using`', async () => {
      const k = key();
      {
        await using lock = await target.locker.acquire(k, { ttl: 5_000 });
        expect(lock.holds).toBe(1);
        expect(await target.other.isLocked(k)).toBe(true);
      }
      expect(await target.other.isLocked(k)).toBe(false);
    });

    it('extends the lease of a held lock and refuses to extend a lost one', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: 1_000 });
      const before = lock.validUntil;
      await lock.extend(10_000);
      expect(lock.validUntil).toBeGreaterThan(before + 5_000);
      expect((await target.other.inspect(k)).ttl).toBeGreaterThan(5_000);
      await lock.release();
      await expect(lock.extend(1_000)).rejects.toBeInstanceOf(NotOwnerError);
    });

    it('reports a lock lost in the very turn its validUntil passes, before any timer has run', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: short(300) });
      const { validUntil } = lock;
      // Nothing of the locker runs meanwhile: only the handle's own reading of the clock can tell.
      blockEventLoop(validUntil - performance.now() + 1);
      expect(lock.remaining()).toBe(0);
      expect(() => lock.assertHeld()).toThrow(LockLostError);
      expect(lock.signal.aborted).toBe(true);
      expect((lock.signal.reason as LockLostError).reason).toBe('expired');
      await lock.release();
    });

    it('aborts the signal with LockLostError when a fixed lease runs out, at validUntil', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: short(300) });
      const { validUntil } = lock;
      const lostAt = await new Promise<number>((resolve) =>
        lock.signal.addEventListener('abort', () => resolve(performance.now()), { once: true }),
      );
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      // Declared from the locker's own clock, which never ends a lease early.
      expect((lock.signal.reason as LockLostError).reason).toBe('expired');
      expect(lostAt).toBeGreaterThanOrEqual(validUntil);
      // Its timer fires at validUntil: only event-loop lag delays it, never seconds.
      expect(lostAt).toBeLessThan(validUntil + 2_000);
      expect(() => lock.assertHeld()).toThrow(LockLostError);
      await lock.release();
    });

    it('keeps a lock without a fixed lease alive through renewals', async () => {
      const k = key();
      // Renewed every third of the lease: five renewals outlast it. The lease is long enough that
      // a loaded host's stalls (250 ms ones, of this process or of a server) do not end it between
      // two renewals: at 600 ms, RedLock's did, and the renewals awaited never came. A loss ends
      // the wait at once.
      const shortLease = target.make({ ttl: short(1_200) });
      const lock = await shortLease.acquire(k);
      const lost = new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
      await Promise.race([renewals(5, k), lost]);
      expect(lock.signal.aborted).toBe(false);
      expect(lock.validUntil).toBeGreaterThan(performance.now());
      const seen = await target.other.inspect(k);
      expect(seen.held).toBe(true);
      expect(seen.fence).toBe(lock.fence);
      expect(await lock.release()).toBe('released');
      expect(await target.other.isLocked(k)).toBe(false);
    });

    it('serialises extend, renewal and release of one hold (formats that rewrite their token included)', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: 5_000 });
      await Promise.all([lock.extend(6_000), lock.extend(7_000), lock.extend(8_000)]);
      expect(lock.signal.aborted).toBe(false);
      const extending = lock.extend(9_000);
      const released = lock.release();
      await extending;
      expect(await released).toBe('released');
      expect(await target.other.isLocked(k)).toBe(false);
    });

    it('never lets two sibling tasks of one critical section hold another lock at once', async () => {
      const outer = key();
      const inner = key();
      const events: string[] = [];
      await target.locker.using(outer, { ttl: 5_000 }, async () => {
        const task = (name: string) =>
          target.locker.using(inner, { ttl: 5_000, wait: 5_000 }, async (lock) => {
            events.push(`${name} in (${lock.holds})`);
            await new Promise((resolve) => setTimeout(resolve, 30));
            events.push(`${name} out`);
          });
        await Promise.all([task('a'), task('b')]);
      });
      expect(events).toEqual(['a in (1)', 'a out', 'b in (1)', 'b out']);
      expect(await target.other.isLocked(inner)).toBe(false);
    });

    it('re-enters only when nested, and never with reentrant: false', async () => {
      const k = key();
      await target.locker.using(k, { ttl: 5_000 }, async (outer) => {
        const nested = await target.locker.acquire(k, { ttl: 5_000, wait: 0 });
        expect(nested.holds).toBe(2);
        expect(nested.fence).toBe(outer.fence);
        expect(await nested.release()).toBe('held');
        const refused = await target.locker
          .acquire(k, { ttl: 5_000, wait: 0, reentrant: false })
          .catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(LockBusyError);
      });
      expect(await target.other.isLocked(k)).toBe(false);
      const strict = target.make({ reentrant: false });
      await strict.using(k, { ttl: 5_000 }, async () => {
        await expect(strict.acquire(k, { wait: 0 })).rejects.toBeInstanceOf(LockBusyError);
      });
    });

    it('keeps every handle of a re-entered lock within the deadline the server honours', async () => {
      for (const [outerTtl, innerTtl] of [
        [2_000, 8_000],
        [8_000, 2_000],
      ] as const) {
        const k = key();
        await target.locker.using(k, { ttl: outerTtl }, async (outer) => {
          const inner = await target.locker.acquire(k, { ttl: innerTtl });
          const pttl = (await target.other.inspect(k)).ttl!;
          const now = performance.now();
          for (const handle of [outer, inner]) expect(handle.validUntil - now).toBeLessThanOrEqual(pttl);
          await inner.release();
        });
      }
    });

    it('does not re-enter a hold it gave up, and using() rejects with LockLostError carrying the outcome', async () => {
      const k = key();
      let skew = 0;
      const skewed = target.make({ clock: () => performance.now() + skew });
      const error = await skewed
        .using(k, { ttl: 5_000 }, async (lock) => {
          skew = 60_000; // the hold's validity has ended in this locker's view: it is lost
          expect(() => lock.assertHeld()).toThrow(LockLostError);
          // The key is still in Redis under the lost hold's owner: a new acquisition must wait.
          await expect(skewed.acquire(k, { wait: 0 })).rejects.toBeInstanceOf(LockBusyError);
          return 'done';
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockLostError);
      expect((error as LockLostError).outcome).toEqual({ status: 'fulfilled', value: 'done' });
      const kept = key();
      skew = 0;
      const result = await skewed.using(kept, { ttl: 5_000, rejectOnLoss: false }, () => {
        skew = 60_000;
        return 'kept';
      });
      expect(result).toBe('kept');
    });

    it('aborts a waiting acquire with an AbortError and leaves nothing behind', async () => {
      const k = key();
      const lock = await target.locker.acquire(k, { ttl: 5_000 });
      const controller = new AbortController();
      const waiting = target.other.acquire(k, { wait: 5_000, signal: controller.signal });
      setTimeout(() => controller.abort(new Error('client went away')), 50);
      const error = await waiting.catch((e: unknown) => e);
      expect((error as Error).name).toBe('AbortError');
      expect(((error as Error).cause as Error).message).toBe('client went away');
      await lock.release();
      expect(await target.other.isLocked(k)).toBe(false);
    });

    it('refuses bad input before writing anything, naming the bad value', async () => {
      const k = key();
      for (const ttl of [0, -1, 1.5, Number.NaN, 2 ** 31, '100']) {
        const error = await target.locker.acquire(k, { ttl: ttl as number }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(InvalidOptionError);
        expect((error as InvalidOptionError).option).toBe('ttl');
        expect((error as Error).message).toContain(String(ttl));
      }
      await expect(target.locker.acquire(k, { wait: -5 })).rejects.toBeInstanceOf(InvalidOptionError);
      const unknown = await target.locker.acquire(k, { tll: 5 } as never).catch((e: unknown) => e);
      expect((unknown as InvalidOptionError).option).toBe('tll');
      await expect(target.locker.acquire('')).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(target.locker.acquire('x'.repeat(5_000))).rejects.toBeInstanceOf(InvalidKeyError);
      await expect(target.locker.acquire(42 as never)).rejects.toBeInstanceOf(InvalidKeyError);
      expect(await target.other.inspect(k)).toMatchObject({ held: false, fence: null });
    });

    it('round-trips awkward key bytes literally', async () => {
      for (const k of [
        `crlf\r\nDEL x\r\n:${randomUUID()}`,
        `glob*?[]:${randomUUID()}`,
        `ünï😀:${randomUUID()}`,
      ]) {
        const lock = await target.locker.acquire(k, { ttl: 5_000 });
        expect(await target.other.isLocked(k)).toBe(true);
        await lock.release();
        expect(await target.other.isLocked(k)).toBe(false);
      }
    });

    it('keeps NFC and NFD spellings of a name apart', async () => {
      const suffix = randomUUID();
      const composed = `caf\u00e9:${suffix}`;
      const decomposed = `cafe\u0301:${suffix}`;
      const first = await target.locker.acquire(composed, { ttl: 5_000 });
      const second = await target.other.acquire(decomposed, { ttl: 5_000, wait: 0 });
      expect(second.fence).toBeGreaterThan(0);
      await first.release();
      await second.release();
    });

    it('rejects pending acquires when closed, at once: a sleeping waiter is woken', async () => {
      const k = key();
      // Nothing but close() can end this wait before the test times out: no poll, no expiry, no release.
      const closing = target.make({ retry: { base: 60_000, max: 60_000 } });
      const lock = await target.locker.acquire(k, { ttl: 60_000 });
      const waiting = closing.acquire(k, { wait: 60_000 }).catch((e: unknown) => e);
      await waiterSubscribed(target.clients, k);
      await closing.close();
      expect(await waiting).toBeInstanceOf(LockerClosedError);
      await expect(closing.acquire(k)).rejects.toBeInstanceOf(LockerClosedError);
      await lock.release();
    });

    it('never lets a lost lock become an unhandled rejection', async () => {
      const k = key();
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const locks: Lock[] = [];
        for (let i = 0; i < 5; i++) locks.push(await target.locker.acquire(`${k}:${i}`, { ttl: short(100) }));
        await Promise.all(
          locks.map((l) =>
            l.signal.aborted
              ? undefined
              : new Promise((resolve) => l.signal.addEventListener('abort', resolve, { once: true })),
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 50));
        await Promise.all(locks.map((l) => l.release()));
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
      expect(unhandled).toEqual([]);
    });
  });
}
