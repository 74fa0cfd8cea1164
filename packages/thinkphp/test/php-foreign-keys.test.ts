import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidKeyError } from '@lock/core';
import { Lock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { serverSeconds, useRedis } from '../../core/test/legacy/fixture.js';
import { type PhpRead, php, phpAvailable, phpCrashAfterSetnx } from './php.js';

// Keys our side did not write, met under a ThinkPHP lock name: a TTL-less timestamp left by a
// PHP process killed between SETNX and EXPIRE (B10: the seed's acquire step run as two
// commands, as the SETNX-then-EXPIRE variant does), a stale timestamp with a live TTL written
// by a PHP host whose clock lags (B2/B6), and a Redisson hash lock (B9).

/** Redisson's RLock acquire script (RedissonLock.tryLockInnerAsync), as a Java service runs it. */
const REDISSON_LOCK = `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`;

/** The server's clock in ms. */
async function serverMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

describe.runIf(phpAvailable)('keys written by others under a ThinkPHP lock name', () => {
  const t = useRedis();

  it('B10: a TTL-less key from a PHP process killed after SETNX is taken over only once skewMargin past its timestamp, with a TTL', async () => {
    const crash = await phpCrashAfterSetnx({ port: t.server.port, key: 'b10b:330', expire: 1 });
    expect(crash).toMatchObject({ signal: 'SIGKILL', setnx: 1, ttl: -1 });
    // The process really died before its EXPIRE.
    expect(await t.redis.ttl('b10b:330')).toBe(-1);
    const stamp = Number(crash.value);

    // Our lease, expire + 1 = 4 s: two PHP process starts (a second or more each on a loaded
    // host) follow the takeover, the second of which must still find the key held.
    const expire = 3;
    const lock = new Lock('b10b:330', { redis: t.redis, expire, retryMax: 1, skewMargin: 1_000 });
    // What the key held after each refusal, and the server time and the key's TTL once we had it.
    const refusals: { value: string | null; ttl: number }[] = [];
    let acquiredBy: number | undefined;
    let ttlWhenAcquired: number | undefined;
    const deadline = performance.now() + 10_000;
    while (acquiredBy === undefined && performance.now() < deadline) {
      const acquired = await lock.lock();
      const after = await serverMs(t.redis);
      if (acquired) {
        acquiredBy = after;
        ttlWhenAcquired = await t.redis.pttl('b10b:330');
      } else {
        refusals.push({ value: await t.redis.get('b10b:330'), ttl: await t.redis.ttl('b10b:330') });
        await sleep(100);
      }
    }
    // Refused at first, each refusal leaving the key as the dead process left it.
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals).toEqual(refusals.map(() => ({ value: crash.value, ttl: -1 })));
    // Taken over, and not before the timestamp plus the margin by the server's clock.
    expect(acquiredBy).toBeGreaterThanOrEqual(stamp * 1000 + 1_000);
    // With a TTL of expire + 1 seconds, read two round trips after the takeover.
    expect(Math.ceil(ttlWhenAcquired! / 1000)).toBe(expire + 1);

    // Ours now, in the format PHP reads, with a TTL: PHP is refused until Redis drops it.
    const read = await php<PhpRead>('read', { port: t.server.port, key: 'b10b:330' });
    expect(read).toMatchObject({ isInt: true, liveBySeedCheck: true });
    // What is left of it once PHP has started.
    expect(read.ttl).toBeGreaterThan(0);
    expect(read.ttl).toBeLessThanOrEqual(expire + 1);
    expect(read.value).not.toBe(crash.value);
    expect((await php('lock', { port: t.server.port, key: 'b10b:330', expire: 1 })).acquired).toBe(false);
    await lock.unlock();
    expect(await t.redis.exists('b10b:330')).toBe(0);
  });

  it('B10 + B2: PHP takes over a just-stale TTL-less key from a crashed PHP process at once; we wait out skewMargin', async () => {
    // A host 2 s behind writes time() − 2 + 1 + 1 = its now: stale for PHP from this second on.
    for (const key of ['b10b:331', 'b10b:332']) {
      const crash = await phpCrashAfterSetnx({ port: t.server.port, key, expire: 1, offset: -2 });
      expect(crash).toMatchObject({ signal: 'SIGKILL', setnx: 1, ttl: -1 });
      expect(Number(crash.value)).toBeLessThanOrEqual(await serverSeconds(t.redis));
    }
    const left = await t.redis.get('b10b:331');
    expect(await new Lock('b10b:331', { redis: t.redis, retryMax: 1, skewMargin: 5_000 }).lock()).toBe(false);
    expect(await t.redis.get('b10b:331')).toBe(left);
    expect(await t.redis.ttl('b10b:331')).toBe(-1);
    const php331 = await php('lock', { port: t.server.port, key: 'b10b:331', expire: 1 });
    expect(php331).toMatchObject({ acquired: true, ttl: 2 });

    // With no margin, the same key is ours at once: the margin is what held us back.
    const noMargin = new Lock('b10b:332', { redis: t.redis, expire: 1, retryMax: 1, skewMargin: 0 });
    expect(await noMargin.lock()).toBe(true);
    expect(Math.ceil((await t.redis.pttl('b10b:332')) / 1000)).toBe(2);
    await noMargin.unlock();
  });

  it('B2/B6: a stale timestamp with a live TTL, written by a PHP host 10 s behind, is never taken over by us (PHP on time does)', async () => {
    const lagging = await php('lock', { port: t.server.port, key: 'b2:333', expire: 3, offset: -10 });
    expect(lagging).toMatchObject({ acquired: true, ttl: 4 });
    expect(Number(lagging.value)).toBeLessThan(await serverSeconds(t.redis));

    const ours = new Lock('b2:333', { redis: t.redis, expire: 1, retryMax: 3, skewMargin: 0 });
    expect(await ours.lock()).toBe(false);
    expect(await t.redis.get('b2:333')).toBe(lagging.value);
    expect(await t.redis.ttl('b2:333')).toBeGreaterThan(0);
    // The hazard our side avoids: an on-time PHP host takes the live lock over.
    const onTime = await php('lock', { port: t.server.port, key: 'b2:333', expire: 3 });
    expect(onTime.acquired).toBe(true);
    expect(await ours.lock()).toBe(false);
  });

  it('B9: a Redisson hash lock under the name: PHP fails with WRONGTYPE, we refuse with InvalidKeyError, and the hash is untouched', async () => {
    expect(
      await t.redis.eval(
        REDISSON_LOCK,
        1,
        'lock_goods:334',
        30_000,
        'b9c1a6f0-0000-4000-8000-000000000001:1',
      ),
    ).toBeNull();
    const hash = await t.redis.hgetall('lock_goods:334');
    expect(hash).toEqual({ 'b9c1a6f0-0000-4000-8000-000000000001:1': '1' });

    const phpLock = await php('lock', { port: t.server.port, key: 'lock_goods:334' });
    expect(phpLock).toMatchObject({ acquired: false, tries: 1, type: 'hash' });
    expect(phpLock.error).toMatch(/WRONGTYPE/);
    await expect(php('unlock', { port: t.server.port, key: 'lock_goods:334' })).rejects.toThrow(/WRONGTYPE/);

    const lock = new Lock('lock_goods:334', { redis: t.redis });
    await expect(lock.lock()).rejects.toThrow(InvalidKeyError);
    // Nothing held, nothing to release.
    await expect(lock.unlock()).resolves.toBeUndefined();
    // Strict mode runs the seed's scripts, but says what the WRONGTYPE means.
    const strict = new Lock('lock_goods:334', { redis: t.redis, strict: true });
    await expect(strict.lock()).rejects.toThrow(InvalidKeyError);
    await expect(strict.unlock()).rejects.toThrow(InvalidKeyError);
    expect(await t.redis.type('lock_goods:334')).toBe('hash');
    expect(await t.redis.hgetall('lock_goods:334')).toEqual(hash);
    expect(await t.redis.pttl('lock_goods:334')).toBeGreaterThan(25_000);
  });
});
