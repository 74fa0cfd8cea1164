import { InvalidOptionError } from '@lock/core';
import { Lock } from '@lock/thinkphp';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { serverSeconds, useRedis } from '../../core/test/legacy/fixture.js';
import { php, phpAvailable } from './php.js';

// Each hazard of legacy-and-php.md §3.3 is first committed by real PHP running the seed's
// class, then the same setup is given to our Lock in its default mode, which must not commit it.

describe.runIf(phpAvailable)('PHP hazards reproduced with PHP, not committed by our side', () => {
  const t = useRedis();
  afterEach(() => {
    vi.useRealTimers();
  });

  it('B1: a PHP takeover writes now + 2·expire + 2 but a TTL of expire + 1; ours differ only by peerClockAhead', async () => {
    await t.redis.set('b1', String((await serverSeconds(t.redis)) - 10));
    const taken = await php('lock', { port: t.server.port, key: 'b1', expire: 3 });
    expect(taken.acquired).toBe(true);
    expect([8, 9]).toContain(Number(taken.value) - taken.time);
    expect(taken.ttl).toBe(4);

    await t.redis.set('b1', String((await serverSeconds(t.redis)) - 10));
    const lock = new Lock('b1', { redis: t.redis, expire: 3 });
    expect(await lock.lock()).toBe(true);
    const value = Number(await t.redis.get('b1'));
    // now + expire + 1, padded by the default peerClockAhead of 2 s.
    expect([5, 6]).toContain(value - (await serverSeconds(t.redis)));
    expect(Math.ceil((await t.redis.pttl('b1')) / 1000)).toBe(4);
    await lock.unlock();
  });

  it('B2: PHP takes over a stale value whose key still has a TTL; we wait for the TTL', async () => {
    await t.redis.set('b2', String((await serverSeconds(t.redis)) - 100), 'EX', 30);
    expect((await php('lock', { port: t.server.port, key: 'b2', expire: 10 })).acquired).toBe(true);

    const stale = String((await serverSeconds(t.redis)) - 100);
    await t.redis.set('b2', stale, 'EX', 30);
    expect(await new Lock('b2', { redis: t.redis, retryMax: 1 }).lock()).toBe(false);
    expect(await t.redis.get('b2')).toBe(stale);
  });

  it('B3: PHP unlock() of its own live lock is a no-op; ours frees it and PHP then acquires', async () => {
    const held = await php('lock', { port: t.server.port, key: 'b3', expire: 10 });
    const released = await php<{ before: string; value: string | null }>('unlock', {
      port: t.server.port,
      key: 'b3',
    });
    expect(released.value).toBe(held.value);
    expect((await php('lock', { port: t.server.port, key: 'b3', expire: 10 })).acquired).toBe(false);

    await t.redis.del('b3');
    const lock = new Lock('b3', { redis: t.redis, expire: 10 });
    expect(await lock.lock()).toBe(true);
    await lock.unlock();
    expect(await t.redis.exists('b3')).toBe(0);
    expect((await php('lock', { port: t.server.port, key: 'b3', expire: 10 })).acquired).toBe(true);
  });

  it('B4: PHP unlock() from a host 20 s ahead deletes a lock it never held; ours deletes only its own', async () => {
    expect((await php('lock', { port: t.server.port, key: 'b4', expire: 10 })).acquired).toBe(true);
    const foreign = await php<{ before: string; value: string | null }>('unlock', {
      port: t.server.port,
      key: 'b4',
      offset: 20,
    });
    expect(foreign.before).not.toBeNull();
    expect(foreign.value).toBeNull();

    // A Lock object that never acquired, and one whose lock a PHP host (+20 s) took over.
    const held = await php('lock', { port: t.server.port, key: 'b4', expire: 10 });
    await new Lock('b4', { redis: t.redis }).unlock();
    expect(await t.redis.get('b4')).toBe(held.value);
    await t.redis.del('b4');
    const ours = new Lock('b4', { redis: t.redis, expire: 10 });
    expect(await ours.lock()).toBe(true);
    const taken = await php('lock', { port: t.server.port, key: 'b4', expire: 10, offset: 20 });
    expect(taken.acquired).toBe(true);
    await ours.unlock();
    expect(await t.redis.get('b4')).toBe(taken.value);
  });

  it('B5: a PHP host 12 s ahead takes over a live lock (two holders); our client clock does not matter', async () => {
    const first = await php('lock', { port: t.server.port, key: 'b5', expire: 10 });
    const ahead = await php('lock', { port: t.server.port, key: 'b5', expire: 10, offset: 12 });
    expect(first.acquired && ahead.acquired).toBe(true);

    await t.redis.del('b5');
    const held = await php('lock', { port: t.server.port, key: 'b5', expire: 10 });
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 12_000);
    expect(await new Lock('b5', { redis: t.redis, retryMax: 1 }).lock()).toBe(false);
    expect(await t.redis.get('b5')).toBe(held.value);
  });

  it('B7: PHP sleep(0.3) sleeps 0 s, three tries back to back; ours pause ~300 ms between tries', async () => {
    expect((await php('lock', { port: t.server.port, key: 'b7', expire: 10 })).acquired).toBe(true);
    const spun = await php('lock', { port: t.server.port, key: 'b7', expire: 10 });
    // sleep() takes whole seconds: PHP says, once per pause, that it made sleep(0.3) a sleep(0).
    const truncated = 'Implicit conversion from float 0.3 to int loses precision';
    expect(spun).toMatchObject({ acquired: false, tries: 3, notices: [truncated, truncated] });

    const lock = new Lock('b7', { redis: t.redis });
    const started = performance.now();
    expect(await lock.lock()).toBe(false);
    // Two pauses of at least 0.75 × 300 ms each; timers never fire early.
    expect(performance.now() - started).toBeGreaterThanOrEqual(450 - 1);
  });

  it('B10: PHP accepts expire -1 (key deleted at once, everyone acquires) and 2.5 (key left without TTL); we refuse both', async () => {
    expect((await php('lock', { port: t.server.port, key: 'b10a', expire: -1 })).acquired).toBe(true);
    expect((await php('lock', { port: t.server.port, key: 'b10a', expire: -1 })).acquired).toBe(true);
    const fractional = await php('lock', { port: t.server.port, key: 'b10b', expire: 2.5 });
    expect(fractional.error).toMatch(/not an integer|out of range/);
    expect(fractional.ttl).toBe(-1);

    await t.redis.flushall();
    for (const expire of [-1, 0, 2.5, Number.NaN]) {
      const lock = new Lock('b10', { redis: t.redis });
      lock.LOCK_EXPIRE = expire;
      await expect(lock.lock()).rejects.toThrow(InvalidOptionError);
      await expect(lock.lock()).rejects.toThrow(/"LOCK_EXPIRE"/);
    }
    expect(() => new Lock('b10', { redis: t.redis, expire: 2.5 })).toThrow(InvalidOptionError);
    expect(await t.redis.dbsize()).toBe(0);
  });
});
