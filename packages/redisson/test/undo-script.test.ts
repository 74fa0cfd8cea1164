import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FairLockProtocol } from '../src/index.js';
import { useRedis } from './helpers/server.js';

const OWNER = '9b3f3c5e-0000-4000-8000-000000000002:3';
const WAITER = '9b3f3c5e-0000-4000-8000-000000000002:4';

/** NOSCRIPT errors the server answered since its stats were last reset. */
async function noScriptErrors(redis: Redis): Promise<number> {
  const stats = await redis.info('errorstats');
  return Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(stats)?.[1] ?? 0);
}

/**
 * A fair lock's undo runs only when an attempt's reply came too late, on a connection that is
 * failing. Sent as EVALSHA, its first run on a server (or after a restart, a failover, SCRIPT
 * FLUSH) cost a NOSCRIPT answer and a second round trip, one more command timeout for the
 * grant it gives back to stay held by nobody.
 */
describe("a fair lock's undo needs no second round trip", () => {
  const context = useRedis();

  it('is run at once on a server that does not know it', async () => {
    const redis: Redis = context.redis;
    const protocol = new FairLockProtocol();
    const taken = await protocol.acquire(redis, 'undone', OWNER, 10_000, { wait: 0, attempt: 'a1' });
    expect(taken).toMatchObject({ acquired: true, holds: 1 });
    await redis.script('FLUSH');
    await redis.config('RESETSTAT');

    expect(await protocol.undo(redis, 'undone', OWNER, '10000', 'a1', { wait: 0 })).toBe('released');
    expect(await redis.exists('undone')).toBe(0);
    expect(await noScriptErrors(redis)).toBe(0);
  });
});

/**
 * A waiter gives up its turn (`abandon`) when its call is aborted or its wait ends, often with
 * the caller's rejection waiting on it: a NOSCRIPT round trip there delays that rejection and,
 * with Redis slow, runs past the call's deadline while the waiter stays queued ahead of others.
 */
describe("a fair lock's give-up needs no second round trip", () => {
  const context = useRedis();

  it('leaves the queue at once on a server that does not know it', async () => {
    const redis: Redis = context.redis;
    const protocol = new FairLockProtocol();
    await protocol.acquire(redis, 'given-up', OWNER, 10_000, { wait: 0 });
    const waiting = await protocol.acquire(redis, 'given-up', WAITER, 10_000, { wait: 5_000 });
    expect(waiting.acquired).toBe(false);
    expect(await redis.lrange('redisson_lock_queue:{given-up}', 0, -1)).toEqual([WAITER]);
    await redis.script('FLUSH');
    await redis.config('RESETSTAT');

    await protocol.abandon(redis, 'given-up', WAITER, { wait: 5_000 });
    expect(await redis.exists('redisson_lock_queue:{given-up}', 'redisson_lock_timeout:{given-up}')).toBe(0);
    expect(await noScriptErrors(redis)).toBe(0);
  });
});
