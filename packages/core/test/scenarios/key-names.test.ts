import { createLocker, InvalidKeyError, type Lock, type Locker, slotKey } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';

/** Names that must be stored byte for byte: injection attempts, glob characters, look-alikes. */
const NAMES = [
  'crlf\r\nFLUSHALL\r\n',
  '*3\r\n$3\r\nDEL\r\n$6\r\ncanary\r\n',
  'nul\u0000byte',
  '*',
  'a?c',
  '[ab]c',
  'caf\u00e9', // NFC
  'cafe\u0301', // NFD: looks the same, other bytes
  'paypal',
  'p\u0430ypal', // Cyrillic а
  '\u{1F512}',
  '{}',
  'a{b',
  'x{}y',
  '{tag}',
];

let server: RedisServer;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = server.client();
  return () => server.stop();
});

async function keyBytes(): Promise<string[]> {
  return (await redis.keysBuffer('*')).map((key) => key.toString('hex'));
}

/** The key each protocol stores for a name (the locker's default prefix `lock:`): token also wraps it in a hash tag. */
const protocols: { name: string; options: object; keyOf: (name: string) => string }[] = [
  { name: 'token', options: {}, keyOf: (name) => slotKey(`lock:${name}`)! },
  { name: 'legacy', options: { protocol: 'legacy' }, keyOf: (name) => `lock:${name}` },
];

describe.each(protocols)('S25: key names on a single server, $name protocol', ({ options, keyOf }) => {
  let locker: Locker;
  beforeAll(() => {
    locker = createLocker({ redis, ...options });
    return () => locker.close();
  });

  it('stores every name literally, keeps look-alikes apart, interprets no glob and injects no command', async () => {
    await redis.flushdb();
    await redis.set('canary', 'alive');
    await redis.config('RESETSTAT');
    const locks: Lock[] = [];
    // All held at once: a look-alike that mapped to the same key would be busy (wait 0 throws).
    for (const name of NAMES) locks.push(await locker.acquire(name, { ttl: 30_000, wait: 0 }));
    const stored = await keyBytes();
    for (const name of NAMES) expect(stored).toContain(Buffer.from(keyOf(name)).toString('hex'));
    expect(await redis.get('canary')).toBe('alive');
    const calls = await redis.info('commandstats');
    expect(calls).not.toMatch(/cmdstat_(flushall|flushdb|del):/);
    expect(await locker.isLocked('abc')).toBe(false);
    expect(await locker.isLocked('p\u0430ypal')).toBe(true);
    for (const lock of locks) expect(await lock.release()).toBe('released');
    for (const name of NAMES) expect(await redis.exists(keyOf(name))).toBe(0);
    expect(await redis.get('canary')).toBe('alive');
  });

  it('refuses a 1 MB name by name, before anything is written', async () => {
    const huge = 'k'.repeat(1024 * 1024);
    const before = await redis.dbsize();
    const refusal = await locker.acquire(huge, { ttl: 1_000, wait: 0 }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(InvalidKeyError);
    expect((refusal as InvalidKeyError).key).toBe(huge);
    expect((refusal as Error).message).toMatch(/^invalid lock key "k{80}…": longer than \d+ bytes$/);
    expect(await redis.dbsize()).toBe(before);
  });
});
