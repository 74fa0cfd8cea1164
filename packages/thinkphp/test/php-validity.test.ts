import { setTimeout as sleep } from 'node:timers/promises';
import { Lock } from '@lock/thinkphp';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../core/test/legacy/fixture.js';
import { type PhpRead, php, phpAvailable, phpCrashAfterSetnx } from './php.js';

// A Node holder (default mode) must stop counting on its lock before any PHP process on a
// host with the same clock may take it: before PHP's time() reaches the value (the seed's
// `value > time()` check) and before Redis drops the key (the TTL PHP reads). The handle's
// validUntil is on the monotonic clock; it is mapped onto the wall clock PHP reads.

/** The wall clock (ms) at a monotonic instant (performance.now(), the engine's clock). */
function wallAt(monotonic: number): number {
  return monotonic + (Date.now() - performance.now());
}

/**
 * Waits for the next wall-clock second, to start 50 ms into it: what follows then runs early in
 * a second (so the value, whole seconds, runs most of a second past the ttl) and in a later
 * second than whatever ran before.
 */
async function nextSecond(): Promise<void> {
  await sleep(1050 - (Date.now() % 1000));
}

/** When our handle ends, and when PHP sees the lock end: by the value, by the key's TTL. */
async function deadlines(lock: Lock, port: number, key: string) {
  const nodeEnds = wallAt(lock.handle!.validUntil);
  const read = await php<PhpRead>('read', { port, key });
  return { read, nodeEnds, byValue: Number(read.value) * 1000, byTtl: read.mtime + read.pttl };
}

describe.runIf(phpAvailable)("a Node holder's validity ends before the deadline PHP sees", () => {
  const t = useRedis();

  it('after a fresh acquire and after extend(), validUntil comes before the value PHP compares with time() and before the TTL PHP reads', async () => {
    await nextSecond();
    const lock = new Lock('lock_goods:310', { redis: t.redis, expire: 3 });
    expect(await lock.lock()).toBe(true);
    const fresh = await deadlines(lock, t.server.port, 'lock_goods:310');
    expect(fresh.read).toMatchObject({ liveBySeedCheck: true, isInt: true });
    expect(fresh.nodeEnds).toBeLessThan(fresh.byValue);
    expect(fresh.nodeEnds).toBeLessThan(fresh.byTtl);

    await nextSecond();
    await lock.handle!.extend();
    const extended = await deadlines(lock, t.server.port, 'lock_goods:310');
    expect(Number(extended.read.value)).toBeGreaterThan(Number(fresh.read.value));
    expect(extended.nodeEnds).toBeGreaterThan(fresh.nodeEnds);
    expect(extended.nodeEnds).toBeLessThan(extended.byValue);
    expect(extended.nodeEnds).toBeLessThan(extended.byTtl);

    // Left alone, the handle's signal aborts on its own, and before PHP's deadlines.
    const signal = lock.handle!.signal;
    const abortedAt = await new Promise<number>((resolve) =>
      signal.addEventListener('abort', () => resolve(Date.now()), { once: true }),
    );
    expect(abortedAt).toBeLessThan(extended.byValue);
    expect(abortedAt).toBeLessThan(extended.byTtl);
  });

  it('after taking over a TTL-less key a crashed PHP process left, validUntil comes before both PHP deadlines', async () => {
    const crash = await phpCrashAfterSetnx({
      port: t.server.port,
      key: 'lock_goods:311',
      expire: 1,
      offset: -60,
    });
    expect(crash).toMatchObject({ signal: 'SIGKILL', setnx: 1, ttl: -1 });
    await nextSecond();
    // A lease of expire + 1 = 4 s, which PHP's read, a process start (a second or more on a
    // loaded host) after the takeover, still finds running.
    const expire = 3;
    const lock = new Lock('lock_goods:311', { redis: t.redis, expire });
    expect(await lock.lock()).toBe(true);
    expect(Math.ceil((await t.redis.pttl('lock_goods:311')) / 1000)).toBe(expire + 1);
    const taken = await deadlines(lock, t.server.port, 'lock_goods:311');
    expect(taken.read.value).not.toBe(crash.value);
    expect(taken.read).toMatchObject({ liveBySeedCheck: true });
    // What is left of it once PHP has started.
    expect(taken.read.ttl).toBeGreaterThan(0);
    expect(taken.read.ttl).toBeLessThanOrEqual(expire + 1);
    expect(taken.nodeEnds).toBeLessThan(taken.byValue);
    expect(taken.nodeEnds).toBeLessThan(taken.byTtl);
  });
});
