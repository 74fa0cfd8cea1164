import { setTimeout as sleep } from 'node:timers/promises';
import { Lock } from '@lock/thinkphp';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../core/test/legacy/fixture.js';
import { type PhpLockResult, php, phpAvailable } from './php.js';

// B5: a PHP host judges expiry by its own clock, so one running `ahead` seconds ahead of the
// Redis server takes over a lock once the value is `ahead` seconds from passing. A PHP process
// played with its time() shifted (as the fleet test skews PHP hosts) calls lock() back to back
// from our acquire on; once it holds the key, our handle must no longer say it holds it too.

describe.runIf(phpAvailable)('a PHP host whose clock runs ahead of the Redis server (B5)', () => {
  const t = useRedis();

  /** PHP lock() calls from a host `ahead` s ahead, back to back, until one gets the key. */
  async function phpTakesOver(key: string, ahead: number): Promise<PhpLockResult> {
    const end = Date.now() + 15_000;
    for (;;) {
      const got = await php('lock', { port: t.server.port, key, expire: 2, offset: ahead });
      if (got.acquired) return got;
      if (Date.now() > end) throw new Error(`PHP ${ahead} s ahead never got ${key}`);
    }
  }

  /** Starts 50 ms into the next wall-clock second, so our value (whole seconds) runs most of a second past the ttl. */
  async function nextSecond(): Promise<void> {
    await sleep(1050 - (Date.now() % 1000));
  }

  it.each([
    { setting: 'default (2 000)', options: {}, ahead: 2, after: 'lock()' },
    { setting: 'default (2 000)', options: {}, ahead: 2, after: 'extend()' },
    { setting: '3 000', options: { peerClockAhead: 3_000 }, ahead: 3, after: 'lock()' },
  ])(
    'peerClockAhead $setting: PHP $ahead s ahead gets the key only once our handle has ended, after $after',
    async ({ options, ahead, after }) => {
      const key = `lock_goods:330:${ahead}:${after}`;
      await nextSecond();
      const lock = new Lock(key, { redis: t.redis, expire: 2, ...options });
      expect(await lock.lock()).toBe(true);
      const handle = lock.handle!;
      if (after === 'extend()') {
        await nextSecond();
        await handle.extend();
      }
      const taken = await phpTakesOver(key, ahead);
      expect(taken.value).not.toBeNull();
      expect(handle.remaining()).toBe(0);
      expect(handle.signal.aborted).toBe(true);
    },
  );

  it('peerClockAhead 0: PHP 2 s ahead takes the key over while our handle still says it holds it (the hazard)', async () => {
    await nextSecond();
    const lock = new Lock('lock_goods:331', { redis: t.redis, expire: 2, peerClockAhead: 0 });
    expect(await lock.lock()).toBe(true);
    const handle = lock.handle!;
    await phpTakesOver('lock_goods:331', 2);
    expect(handle.remaining()).toBeGreaterThan(0);
    expect(handle.signal.aborted).toBe(false);
  });
});
