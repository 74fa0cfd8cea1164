import { createLocker, type Locker } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * S27: the least a lock user needs, found by removing one command at a time from a working set
 * (each removal below broke acquire, renewal, release or waking). Keys and channels: the
 * locker's prefix (`lock:`), here limited to names under `app:`. Redis checks ACLs inside
 * scripts too, so the commands the scripts call are listed. Both protocols also need:
 * `info` (ioredis's ready check and the replica probe of `replication: 'auto'`), `evalsha` and
 * `eval` (the fallback when the server lost its script cache), `subscribe`/`unsubscribe` (waiters
 * woken by the release message; without them they fall back to polling), and `wait` once the
 * server has replicas (WAIT gating).
 */
const COMMON = ['info', 'evalsha', 'eval', 'subscribe', 'unsubscribe', 'wait'];
const COMMANDS = {
  token: [
    ...COMMON,
    'exists',
    'hset',
    'pexpire',
    'incr',
    'hexists',
    'hincrby',
    'pttl',
    'get',
    'hget',
    'hgetall',
    'del',
    'hdel',
    'publish',
    'time',
    // The queue of waiters (a sorted set beside the lock).
    'zadd',
    'zrange',
    'zrem',
  ],
  legacy: [
    ...COMMON,
    'set',
    'get',
    'type',
    'time',
    'hset',
    'hmget',
    'pexpire',
    'pttl',
    'incr',
    'del',
    'publish',
  ],
};
// `{lock:#}:fences`: the fence counter every lock of the `lock:` prefix shares.
const KEYS = ['~{lock:app:*', '~lock:app:*', '~{lock:#}:fences', '&{lock:app:*', '&lock:app:*'];

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
  const admin = server.client();
  for (const [protocol, commands] of Object.entries(COMMANDS)) {
    const allowed = commands.map((command) => `+${command}`);
    await admin.call(
      'ACL',
      'SETUSER',
      protocol,
      'on',
      '>locker-pw',
      'resetkeys',
      'resetchannels',
      ...KEYS,
      '-@all',
      ...allowed,
    );
  }
  return () => server.stop();
});

function lockerAs(protocol: 'token' | 'legacy'): Locker {
  const redis = server.client({ username: protocol, password: 'locker-pw' });
  return createLocker({ redis, protocol, ttl: 900 });
}

describe.each(['token', 'legacy'] as const)(
  'S27: an ACL user limited to its key pattern and these commands, %s protocol',
  (protocol) => {
    it('acquires, waits (woken by the release message), renews, inspects and releases', async () => {
      const a = lockerAs(protocol);
      const b = lockerAs(protocol);
      const lock = await a.acquire('app:1');
      expect(await a.isLocked('app:1')).toBe(true);
      expect((await a.inspect('app:1')).held).toBe(true);
      await expect(b.tryAcquire('app:1')).resolves.toBeNull();
      const waiting = b.acquire('app:1', { wait: 5_000 });
      // Awaited below; this keeps an early failure of the test from leaving it unhandled.
      waiting.catch(() => {});
      await lock.extend();
      // Outlives one renewal (ttl/3) of the watchdog.
      await new Promise((resolve) => setTimeout(resolve, 700));
      lock.assertHeld();
      await lock.release();
      const next = await waiting;
      expect(next.fence).toBeGreaterThan(lock.fence);
      await next.release();
      await a.close();
      await b.close();
    });

    it('is refused (NOPERM) on a name outside its pattern, and writes nothing there', async () => {
      const a = lockerAs(protocol);
      await expect(a.acquire('other:1', { wait: 0 })).rejects.toThrow(/NOPERM/);
      expect(await server.client().keys('*other*')).toEqual([]);
      await a.close();
    });
  },
);
