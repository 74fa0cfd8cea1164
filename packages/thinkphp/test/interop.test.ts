import { Lock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../core/test/legacy/fixture.js';
import { type PhpRead, php, phpAvailable } from './php.js';

/** Polls until Redis has expired the key: ordering by the server's own TTL, not a guessed sleep. */
async function untilExpired(redis: Redis, key: string): Promise<void> {
  await expect.poll(() => redis.exists(key), { timeout: 10_000, interval: 50 }).toBe(0);
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
    const lock = new Lock('lock_goods:301', { redis: t.redis });
    expect(await lock.lock()).toBe(true);
    const read = await php<{ value: string; ttl: number; time: number; digits: boolean; isInt: boolean }>(
      'read',
      {
        port: t.server.port,
        key: 'lock_goods:301',
      },
    );
    expect(read).toMatchObject({
      digits: true,
      isInt: true,
      liveBySeedCheck: true,
      ttl: Lock.LOCK_EXPIRE + 1,
    });
    // Our value comes from the server's clock, PHP's time() from the host's: the same clock
    // here, but the second may tick between the two reads. The default peerClockAhead adds 2 s.
    expect([Lock.LOCK_EXPIRE + 2, Lock.LOCK_EXPIRE + 3]).toContain(Number(read.value) - read.time);
    await lock.unlock();

    const exact = new Lock('lock_goods:301', { redis: t.redis, peerClockAhead: 0 });
    expect(await exact.lock()).toBe(true);
    const same = await php<PhpRead>('read', { port: t.server.port, key: 'lock_goods:301' });
    expect(same).toMatchObject({ isInt: true, liveBySeedCheck: true, ttl: Lock.LOCK_EXPIRE + 1 });
    expect([Lock.LOCK_EXPIRE, Lock.LOCK_EXPIRE + 1]).toContain(Number(same.value) - same.time);
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
