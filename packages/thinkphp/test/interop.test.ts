import { Lock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { serverSeconds, useRedis } from '../../core/test/legacy/fixture.js';
import { type PhpRead, php, phpAvailable } from './php.js';

/** Polls until Redis has expired the key: ordering by the server's own TTL, not a guessed sleep. */
async function untilExpired(redis: Redis, key: string): Promise<void> {
  await expect.poll(() => redis.exists(key), { timeout: 10_000, interval: 50 }).toBe(0);
}

/** The key's value, its TTL in whole seconds (rounded up) and how far its value is ahead of the server's clock, in s. */
async function writtenNow(redis: Redis, key: string) {
  const [value, pttl, now] = await Promise.all([redis.get(key), redis.pttl(key), serverSeconds(redis)]);
  return { value, ttl: Math.ceil(pttl / 1000), ahead: Number(value) - now };
}

describe.runIf(phpAvailable)('PHP and Node processes sharing ThinkPHP lock keys', () => {
  const t = useRedis();

  it('a PHP holder makes our lock() return false within the retry budget; after expiry we acquire', async () => {
    const held = await php('lock', { port: t.server.port, key: 'lock_goods:300', expire: 1 });
    expect(held.acquired).toBe(true);
    const lock = new Lock('lock_goods:300', { redis: t.redis, expire: 1 });
    expect(await lock.lock()).toBe(false);
    expect(await t.redis.get('lock_goods:300')).toBe(held.value);
    await untilExpired(t.redis, 'lock_goods:300');
    expect(await lock.lock()).toBe(true);
    await lock.unlock();
  });

  it('our holder makes PHP lock() return false; after expiry PHP acquires', async () => {
    const lock = new Lock('lock_goods:300', { redis: t.redis, expire: 1 });
    expect(await lock.lock()).toBe(true);
    const refused = await php('lock', { port: t.server.port, key: 'lock_goods:300', expire: 1 });
    expect(refused).toMatchObject({ acquired: false, tries: 3, error: null });
    await untilExpired(t.redis, 'lock_goods:300');
    expect((await php('lock', { port: t.server.port, key: 'lock_goods:300', expire: 1 })).acquired).toBe(
      true,
    );
  });

  it('PHP reads what we write as integer seconds now + expire + 1 + peerClockAhead with TTL expire + 1', async () => {
    // What we wrote is checked by reads right after the acquire, one round trip later: PHP's own
    // read comes a process start later (a second or more on a loaded host), when the TTL has
    // run down and time() may have ticked twice. PHP's read checks what PHP makes of it.
    const lock = new Lock('lock_goods:301', { redis: t.redis });
    expect(await lock.lock()).toBe(true);
    const written = await writtenNow(t.redis, 'lock_goods:301');
    expect(written.ttl).toBe(Lock.LOCK_EXPIRE + 1);
    // Our value comes from the server's clock, read again just after: the second may tick
    // between the two reads. The default peerClockAhead adds 2 s.
    expect([Lock.LOCK_EXPIRE + 2, Lock.LOCK_EXPIRE + 3]).toContain(written.ahead);
    const read = await php<PhpRead>('read', { port: t.server.port, key: 'lock_goods:301' });
    expect(read).toMatchObject({ value: written.value, digits: true, isInt: true, liveBySeedCheck: true });
    expect(read.ttl).toBeGreaterThan(0);
    expect(read.ttl).toBeLessThanOrEqual(Lock.LOCK_EXPIRE + 1);
    await lock.unlock();

    const exact = new Lock('lock_goods:301', { redis: t.redis, peerClockAhead: 0 });
    expect(await exact.lock()).toBe(true);
    const unpadded = await writtenNow(t.redis, 'lock_goods:301');
    expect(unpadded.ttl).toBe(Lock.LOCK_EXPIRE + 1);
    expect([Lock.LOCK_EXPIRE, Lock.LOCK_EXPIRE + 1]).toContain(unpadded.ahead);
    const same = await php<PhpRead>('read', { port: t.server.port, key: 'lock_goods:301' });
    expect(same).toMatchObject({ value: unpadded.value, isInt: true, liveBySeedCheck: true });
    await exact.unlock();
  });

  it('PHP-written values are read by our side: a PHP lock refuses us with its own TTL intact', async () => {
    const held = await php('lock', { port: t.server.port, key: '{lock_goods}:302' });
    expect(held).toMatchObject({ acquired: true, ttl: 4 });
    const lock = new Lock('{lock_goods}:302', { redis: t.redis, retryMax: 1 });
    expect(await lock.lock()).toBe(false);
    expect(await t.redis.ttl('{lock_goods}:302')).toBeGreaterThan(0);
  });
});
