import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { HashLockProtocol } from '../src/hash-protocol.js';
import {
  FairLockProtocol,
  FencedLockProtocol,
  ReadLockProtocol,
  RLockProtocol,
  WriteLockProtocol,
} from '../src/index.js';
import { useRedis } from './helpers/server.js';

const OWNER = '9b3f3c5e-0000-4000-8000-000000000002:3';

/**
 * The undo of one acquire attempt (the engine's, for a thread's grant whose reply came too
 * late) takes off the hold that attempt counted, once however often it is sent, and nothing
 * when the attempt counted no hold the thread still has; a last hold goes as unlock frees it.
 */
describe.each([
  ['RLock', () => new RLockProtocol(), OWNER, 'redisson_lock__channel', '0'],
  ['fenced lock', () => new FencedLockProtocol(), OWNER, 'redisson_lock__channel', '0'],
  ['write lock', () => new WriteLockProtocol(), `${OWNER}:write`, 'redisson_rwlock', '1'],
  ['read lock', () => new ReadLockProtocol(), OWNER, 'redisson_rwlock', '0'],
])('%s undo', (_kind, make, field, channel, message) => {
  const context = useRedis();
  const LATCHES = (name: string) => `redisson_lock_attempt:{${name}}:${field}`;
  const take = (protocol: HashLockProtocol, name: string, attempt: string) =>
    protocol.acquire(context.redis, name, OWNER, 10_000, { wait: 0, attempt });

  it("takes off the attempt's hold once, however often it is sent", async () => {
    const redis: Redis = context.redis;
    const protocol: HashLockProtocol = make();
    await take(protocol, 'u', 'a1');
    await take(protocol, 'u', 'a2');
    expect(await protocol.undo(redis, 'u', OWNER, '10000', 'a2')).toBe('held');
    expect(await protocol.undo(redis, 'u', OWNER, '10000', 'a2')).toBe('held');
    expect(await redis.hget('u', field)).toBe('1');
    expect(await redis.lrange(LATCHES('u'), 0, -1)).not.toContainEqual(expect.stringMatching(/:a2$/));
    expect(await context.published.take()).toEqual([]);
  });

  it('frees a last hold as unlock does: the unlock message first, then the hash and the latches', async () => {
    const redis: Redis = context.redis;
    const protocol: HashLockProtocol = make();
    await take(protocol, 'v', 'a1');
    expect(await protocol.undo(redis, 'v', OWNER, '10000', 'a1')).toBe('released');
    expect(await redis.exists('v', LATCHES('v'))).toBe(0);
    expect(await context.published.take()).toEqual([{ channel: `${channel}:{v}`, message }]);
    expect(await protocol.undo(redis, 'v', OWNER, '10000', 'a1')).toBe('not-owner');
  });

  it('leaves alone a hold its attempt did not count', async () => {
    const redis: Redis = context.redis;
    const protocol: HashLockProtocol = make();
    await take(protocol, 'w', 'a1');
    expect(await protocol.undo(redis, 'w', OWNER, '10000', 'never-applied')).toBe('held');
    expect(await redis.hget('w', field)).toBe('1');
    expect(await context.published.take()).toEqual([]);
  });

  it('is run at once on a server that does not know it', async () => {
    const redis: Redis = context.redis;
    const protocol: HashLockProtocol = make();
    await take(protocol, 'x', 'a1');
    await redis.script('FLUSH');
    await redis.config('RESETSTAT');
    expect(await protocol.undo(redis, 'x', OWNER, '10000', 'a1')).toBe('released');
    const stats = await redis.info('errorstats');
    expect(stats).not.toContain('NOSCRIPT');
  });
});

/** Edges the undo shares with unlock (release.lua), which it runs once the attempt is found. */
describe('RLock undo, as unlock', () => {
  const context = useRedis();
  const waiting = (attempt: string) => ({ wait: Number.POSITIVE_INFINITY, attempt });
  const [a, b, c] = ['a', 'b', 'c'].map((t) => `9b3f3c5e-0000-4000-8000-00000000000${t}:1`) as [
    string,
    string,
    string,
  ];

  it('leaves a fair turn kept for the thread its own end, waking the head of the queue', async () => {
    const { redis, published } = context;
    const fair = new FairLockProtocol({ turnGrace: 5_000 });
    const plain = new RLockProtocol();
    await fair.acquire(redis, 'kept', a, 30_000, waiting('a1'));
    await fair.acquire(redis, 'kept', b, 30_000, waiting('b0'));
    await fair.acquire(redis, 'kept', c, 30_000, waiting('c0'));
    await fair.release(redis, 'kept', a, '30000');
    expect((await fair.acquire(redis, 'kept', b, 30_000, waiting('b1'))).acquired).toBe(true);
    expect(await fair.undo(redis, 'kept', b, '30000', 'b1')).toBe('held');
    expect(await plain.acquire(redis, 'kept', b, 30_000, waiting('r1'))).toMatchObject({ holds: 2 });
    await published.take();

    expect(await plain.undo(redis, 'kept', b, '30000', 'r1')).toBe('held');
    expect(await redis.hget('kept', b)).toBe('1');
    expect(await redis.pttl('kept')).toBeLessThanOrEqual(5_000);
    expect(await published.take()).toEqual([{ channel: `redisson_lock__channel:{kept}:${c}`, message: '0' }]);
  });

  it('refused its message by the ACL, writes nothing, and a retry still frees the lock', async () => {
    const { redis: admin, server, published } = context;
    await admin.call('ACL', 'SETUSER', 'no-publish', 'on', '>pw', '~*', '&*', '+@all', '-publish');
    const redis = server.client({ username: 'no-publish', password: 'pw' });
    const plain = new RLockProtocol();
    await plain.acquire(admin, 'acl', a, 30_000, { wait: 0, attempt: 'a1' });
    await expect(plain.undo(redis, 'acl', a, '30000', 'a1')).rejects.toThrow(/can't run this command/);
    expect(await admin.hget('acl', a)).toBe('1');
    expect(await plain.undo(admin, 'acl', a, '30000', 'a1')).toBe('released');
    expect(await admin.exists('acl')).toBe(0);
    expect(await published.take()).toEqual([{ channel: 'redisson_lock__channel:{acl}', message: '0' }]);
    await redis.quit();
  });
});

describe('read lock undo', () => {
  const context = useRedis();
  it("keeps the thread's later read hold its lease: the unlock it runs deletes the newest timeout key, not the attempt's", async () => {
    const { redis } = context;
    const read = new ReadLockProtocol();
    // L: the attempt given up on, a short lease; M: the thread's re-entry handed out since.
    await read.acquire(redis, 'r', OWNER, 1_000, { wait: 0, attempt: 'L' });
    expect(await read.acquire(redis, 'r', OWNER, 60_000, { wait: 0, attempt: 'M' })).toMatchObject({
      acquired: true,
    });
    expect(await read.undo(redis, 'r', OWNER, '1000', 'L')).toBe('held');
    expect(await redis.hget('r', OWNER)).toBe('1');
    expect(await redis.pttl('r')).toBeGreaterThan(50_000);
    expect(await redis.pttl(`{r}:${OWNER}:rwlock_timeout:1`)).toBeGreaterThan(50_000);
  });
});
