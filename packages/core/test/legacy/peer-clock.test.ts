import { clockDrift, createLocker, InvalidOptionError, type Lock, legacyProtocol } from '@lock/core';
import { describe, expect, it } from 'vitest';
import { until } from '../support/waiter-queue.js';
import { useRedis } from './fixture.js';

// A legacy peer whose clock runs `ahead` ms ahead of the server reads our timestamp that much
// early: it may take the lock over once value (in ms) - ahead has passed by server time. The
// validity our handle reports must end before that, after an acquire, an extend and a renewal,
// while it stays the ttl the caller asked for. The handle's validUntil is on the monotonic
// clock; the server runs on this host, so it is mapped onto the wall clock the server reads.

const t = useRedis();

/** The wall clock (ms) at a monotonic instant (performance.now(), the engine's clock). */
function wallAt(monotonic: number): number {
  return monotonic + (Date.now() - performance.now());
}

const scales = { ms: 1, s: 1_000 } as const;

/** When a peer `ahead` ms ahead reads the key's value as past, by server time (ms). */
async function peerTakesOverAt(key: string, unit: 'ms' | 's', ahead: number): Promise<number> {
  return Number(await t.redis.get(key)) * scales[unit] - ahead;
}

describe.each([
  { unit: 'ms' as const, ahead: 1_500, ttl: 3_000 },
  { unit: 's' as const, ahead: 1_500, ttl: 3_000 },
  { unit: 's' as const, ahead: 2_000, ttl: 1_000 },
])('legacy protocol in $unit with peerClockAhead $ahead, ttl $ttl', ({ unit, ahead, ttl }) => {
  const locker = () =>
    createLocker({ redis: t.redis, protocol: legacyProtocol({ unit, peerClockAhead: ahead }), prefix: '' });

  /** The handle's validity ends before a peer that far ahead reads the value as past. */
  async function expectEndsBeforePeer(lock: Lock) {
    expect(wallAt(lock.validUntil)).toBeLessThan(await peerTakesOverAt('k', unit, ahead));
  }

  it('the validity reported for an acquire and for an extend ends before the padded value, and is still the ttl', async () => {
    const legacy = locker();
    const sent = performance.now();
    const lock = await legacy.acquire('k', { ttl });
    await expectEndsBeforePeer(lock);
    // The padding costs no validity: the TTL is the ttl (plus PHP's second), and so is the hold.
    expect(lock.validUntil).toBeGreaterThanOrEqual(sent + ttl - clockDrift(ttl));
    expect(await t.redis.pttl('k')).toBeLessThanOrEqual(ttl + (unit === 's' ? 1_000 : 0));

    const extending = performance.now();
    await lock.extend();
    await expectEndsBeforePeer(lock);
    expect(lock.validUntil).toBeGreaterThanOrEqual(extending + ttl - clockDrift(ttl));
    await lock.release();
    await legacy.close();
  });

  it("the watchdog's renewals write padded values too and keep the hold", async () => {
    const legacy = locker();
    const lock = await legacy.acquire('k', { ttl, renew: true });
    for (let renewal = 0; renewal < 2; renewal++) {
      const before = lock.validUntil;
      await until(async () => lock.validUntil !== before, 'a renewal');
      const renewed = lock.validUntil;
      const takeover = await peerTakesOverAt('k', unit, ahead);
      // No later renewal slipped in between (a later value would prove nothing about this one).
      expect(lock.validUntil).toBe(renewed);
      expect(wallAt(renewed)).toBeLessThan(takeover);
    }
    expect(lock.signal.aborted).toBe(false);
    expect(lock.remaining()).toBeGreaterThan(0);
    await lock.release();
    await legacy.close();
  });
});

describe('peerClockAhead', () => {
  it('defaults to 2 s: a peer 2 s ahead reads the value as past only after the validity ended', async () => {
    const legacy = createLocker({ redis: t.redis, protocol: legacyProtocol({ unit: 's' }), prefix: '' });
    const lock = await legacy.acquire('k', { ttl: 3_000 });
    expect(wallAt(lock.validUntil)).toBeLessThan(await peerTakesOverAt('k', 's', 2_000));
    await lock.release();
    await legacy.close();
  });

  it('at 0 leaves the validity ending after a peer 2 s ahead may take over (the hazard it covers)', async () => {
    const legacy = createLocker({
      redis: t.redis,
      protocol: legacyProtocol({ unit: 's', peerClockAhead: 0 }),
      prefix: '',
    });
    const lock = await legacy.acquire('k', { ttl: 3_000 });
    expect(wallAt(lock.validUntil)).toBeGreaterThan(await peerTakesOverAt('k', 's', 2_000));
    await lock.release();
    await legacy.close();
  });

  it('refuses a value that is not a whole number of ms from 0 to 2^31 - 1, naming it, before anything is written', async () => {
    for (const bad of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '2000', true]) {
      expect(() => legacyProtocol({ peerClockAhead: bad as number })).toThrow(InvalidOptionError);
      expect(() =>
        createLocker({ redis: t.redis, protocol: legacyProtocol({ peerClockAhead: bad as number }) }),
      ).toThrow(InvalidOptionError);
    }
    expect(() => legacyProtocol({ unit: 's', peerClockAhead: -2_000 })).toThrow(/"peerClockAhead": -2000/);
    expect(() => legacyProtocol({ peerClockAhead: '2000' as never })).toThrow(/"peerClockAhead": "2000"/);
    expect(await t.redis.dbsize()).toBe(0);
  });
});
