import { setTimeout as sleep } from 'node:timers/promises';
import { Lock } from '@lock/thinkphp';
import { describe, expect, it } from 'vitest';
import { serverSeconds, useRedis } from '../../core/test/legacy/fixture.js';
import { php, phpAvailable } from './php.js';

// A PHP host whose clock runs 10 s ahead calls unlock() (legacy-and-php.md B4): by its clock our
// live lock has expired, so it deletes it. A PHP host 2 s ahead (as far as our default
// peerClockAhead pads our values for) then acquires within the same second with the same expire,
// writing the very timestamp we wrote. Our owner record (a side
// key PHP never touches) still names that timestamp: only its TTL, which runs from our acquire
// and no longer matches the key's, tells that the key is not ours any more (owner-record.lua).

describe.runIf(phpAvailable)('a PHP re-acquire in the same second after a skewed PHP unlock', () => {
  const t = useRedis();

  /**
   * Our lock on a fresh key, deleted by a PHP host 10 s ahead, re-taken by a PHP host 2 s ahead
   * in the same second as our acquire (its clock set to that second, whenever it runs): tried
   * from a second boundary until the PHP value equals ours (the first try fits unless the
   * second ticked between our acquire and the read of the server's clock after it).
   */
  async function retakenInSameSecond(name: string) {
    for (let i = 0; i < 5; i++) {
      await sleep(1020 - (Date.now() % 1000));
      const key = `${name}:${i}`;
      const lock = new Lock(key, { redis: t.redis, expire: 3 });
      expect(await lock.lock()).toBe(true);
      const [value, second] = await Promise.all([t.redis.get(key), serverSeconds(t.redis)]);
      const token = value!;
      const deleted = await php<{ before: string | null; value: string | null }>('unlock', {
        port: t.server.port,
        key,
        offset: 10,
      });
      expect(deleted).toMatchObject({ before: token, value: null });
      // 2 s ahead of the second of our acquire, as read then: two PHP process starts on a loaded
      // host can take longer than the rest of that second.
      const retaken = await php('lock', { port: t.server.port, key, expire: 3, at: second + 2 });
      expect(retaken.acquired).toBe(true);
      if (retaken.value === token) {
        // The setup holds: the key carries our timestamp, written by PHP, and our owner record,
        // outliving our deleted key, still names us and that timestamp.
        const record = `{${key}}:owner`;
        expect(await t.redis.hget(record, 'value')).toBe(token);
        expect(await t.redis.pttl(record)).toBeGreaterThan(0);
        expect(await t.redis.pttl(key)).toBeGreaterThan(await t.redis.pttl(record));
        return { lock, key, token };
      }
    }
    throw new Error('PHP never re-acquired within the second of our acquire in 5 tries');
  }

  /** The PHP lock is intact: its value, a TTL, an on-time PHP host and a new Node lock refused. */
  async function expectPhpStillHolds(key: string, token: string): Promise<void> {
    expect(await t.redis.get(key)).toBe(token);
    expect(await t.redis.ttl(key)).toBeGreaterThan(0);
    expect((await php('lock', { port: t.server.port, key, expire: 3 })).acquired).toBe(false);
    expect(await new Lock(key, { redis: t.redis, retryMax: 1 }).lock()).toBe(false);
  }

  it('our unlock() leaves the PHP lock that carries our timestamp', async () => {
    const { lock, key, token } = await retakenInSameSecond('lock_goods:320');
    await lock.unlock();
    expect(lock.handle).toBeNull();
    await expectPhpStillHolds(key, token);
  });

  it('our extend() fails and the handle says lost, leaving the PHP lock as it was', async () => {
    const { lock, key, token } = await retakenInSameSecond('lock_goods:321');
    const handle = lock.handle!;
    await expect(handle.extend()).rejects.toThrow(/lost/);
    expect(handle.signal.aborted).toBe(true);
    expect(await t.redis.pttl(key)).toBeLessThanOrEqual(4_000);
    await expectPhpStillHolds(key, token);
  });
});
