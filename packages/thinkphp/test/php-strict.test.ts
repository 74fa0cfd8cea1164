import { Lock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../core/test/legacy/fixture.js';
import { php, phpAvailable, phpCrashAfterSetnx } from './php.js';

// Strict mode (`strict: true`) is the seed's algorithm run from Node: here it meets the real PHP
// class on one key, both ways, and writes what PHP writes byte for byte.

/** Polls until Redis has expired the key: ordering by the server's own TTL, not a guessed sleep. */
async function untilExpired(redis: Redis, key: string): Promise<void> {
  await expect.poll(() => redis.exists(key), { timeout: 10_000, interval: 50 }).toBe(0);
}

// The seed's unlock deletes a lock whose timestamp (time() + expire + 1) is no longer ahead of
// time(): with expire 1 that comes two second boundaries (1 to 2 s) after the acquire, within a few PHP
// process starts on a loaded host. Tests that unlock a live lock keep it live for longer.
const EXPIRE = 4;

describe.runIf(phpAvailable)('strict mode and real PHP on one key', () => {
  const t = useRedis();

  it('given the time() PHP used, strict mode writes the same bytes with the same TTL (SETNX path)', async () => {
    const written = await php('lock', { port: t.server.port, key: 'php:300', expire: 3 });
    expect(written).toMatchObject({ acquired: true, ttl: 4 });
    // PHP wrote time() + expire + 1 at its acquire.
    const phpTime = Number(written.value) - 4;
    const strict = new Lock('node:300', { redis: t.redis, strict: true, expire: 3, time: () => phpTime });
    expect(await strict.lock()).toBe(true);
    expect(await t.redis.type('node:300')).toBe('string');
    expect(await t.redis.get('node:300')).toBe(written.value);
    expect(Math.ceil((await t.redis.pttl('node:300')) / 1000)).toBe(written.ttl);
  });

  it('given the time() PHP used, a strict takeover of a TTL-less stale key writes what PHP writes (now + 2·expire + 2, TTL expire + 1)', async () => {
    // Two stale keys without TTL, each left by a PHP process killed between SETNX and EXPIRE.
    for (const key of ['php:301', 'node:301']) {
      const crash = await phpCrashAfterSetnx({ port: t.server.port, key, expire: 3, offset: -60 });
      expect(crash).toMatchObject({ signal: 'SIGKILL', setnx: 1, ttl: -1 });
    }
    const taken = await php('lock', { port: t.server.port, key: 'php:301', expire: 3 });
    expect(taken).toMatchObject({ acquired: true, ttl: 4 });
    const phpTime = Number(taken.value) - 2 * 3 - 2;
    const strict = new Lock('node:301', { redis: t.redis, strict: true, expire: 3, time: () => phpTime });
    expect(await strict.lock()).toBe(true);
    expect(await t.redis.get('node:301')).toBe(taken.value);
    expect(Math.ceil((await t.redis.pttl('node:301')) / 1000)).toBe(4);
  });

  it('a strict holder refuses PHP (3 tries) and PHP reads its value as its own; after the TTL PHP acquires', async () => {
    const strict = new Lock('lock_goods:302', { redis: t.redis, strict: true, expire: EXPIRE });
    expect(await strict.lock()).toBe(true);
    const value = await t.redis.get('lock_goods:302');
    const refused = await php('lock', { port: t.server.port, key: 'lock_goods:302', expire: EXPIRE });
    expect(refused).toMatchObject({ acquired: false, tries: 3, error: null, value });
    // expire + 1 seconds, of which PHP's start (slow on a loaded host) has taken some.
    expect(refused.ttl).toBeGreaterThanOrEqual(EXPIRE - 2);
    expect(refused.ttl).toBeLessThanOrEqual(EXPIRE + 1);
    const read = await php<{ time: number; liveBySeedCheck: boolean; isInt: boolean }>('read', {
      port: t.server.port,
      key: 'lock_goods:302',
    });
    expect(read).toMatchObject({ isInt: true, liveBySeedCheck: true });
    // time() + expire + 1 from this host's clock, read back by PHP on the same clock a moment later.
    expect(Number(value) - read.time).toBeGreaterThanOrEqual(EXPIRE - 2);
    expect(Number(value) - read.time).toBeLessThanOrEqual(EXPIRE + 1);
    // PHP's release of a live lock is a no-op (B3), whoever wrote it.
    const released = await php<{ value: string | null }>('unlock', {
      port: t.server.port,
      key: 'lock_goods:302',
    });
    expect(released.value).toBe(value);

    await untilExpired(t.redis, 'lock_goods:302');
    expect((await php('lock', { port: t.server.port, key: 'lock_goods:302', expire: EXPIRE })).acquired).toBe(
      true,
    );
  });

  it('a PHP holder refuses strict mode, whose unlock then leaves the live PHP lock; after the TTL strict acquires', async () => {
    const held = await php('lock', { port: t.server.port, key: 'lock_goods:303', expire: EXPIRE });
    expect(held.acquired).toBe(true);
    const strict = new Lock('lock_goods:303', { redis: t.redis, strict: true, expire: EXPIRE });
    expect(await strict.lock()).toBe(false);
    await strict.unlock();
    expect(await t.redis.get('lock_goods:303')).toBe(held.value);
    expect(await t.redis.ttl('lock_goods:303')).toBeGreaterThan(0);

    await untilExpired(t.redis, 'lock_goods:303');
    expect(await strict.lock()).toBe(true);
    expect((await php('lock', { port: t.server.port, key: 'lock_goods:303', expire: EXPIRE })).acquired).toBe(
      false,
    );
  });

  it('bug for bug (B5): a strict host 12 s ahead takes over a live PHP lock, and a PHP host 12 s ahead a live strict one', async () => {
    const phpHeld = await php('lock', { port: t.server.port, key: 'b5:php', expire: 10 });
    expect(phpHeld.acquired).toBe(true);
    const ahead = () => Math.floor(Date.now() / 1000) + 12;
    expect(await new Lock('b5:php', { redis: t.redis, strict: true, expire: 10, time: ahead }).lock()).toBe(
      true,
    );
    expect(await t.redis.get('b5:php')).not.toBe(phpHeld.value);

    const strict = new Lock('b5:node', { redis: t.redis, strict: true, expire: 10 });
    expect(await strict.lock()).toBe(true);
    const value = await t.redis.get('b5:node');
    const taken = await php('lock', { port: t.server.port, key: 'b5:node', expire: 10, offset: 12 });
    expect(taken.acquired).toBe(true);
    expect(taken.value).not.toBe(value);
  });
});
