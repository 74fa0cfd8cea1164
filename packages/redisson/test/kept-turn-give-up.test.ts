import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FairLockProtocol } from '../src/fair/protocol.js';
import { RLockProtocol } from '../src/lock/protocol.js';
import { useRedis } from './helpers/server.js';

const waiting = (attempt: string) => ({ wait: Number.POSITIVE_INFINITY, attempt });

/**
 * A waiting fair-lock call gives its kept turn up (fair/give-up.lua) while the same thread still
 * holds the lock through a `getLock` re-entry: the lock lives on as that plain hold. When it is
 * freed, the fair waiters must hear it on their own channels as from a fair unlock: a Java fair
 * waiter listens on no other, and would otherwise poll again only at the end of the TTL it last
 * read (the RLock hold's, up to its 30 s lease).
 */
describe('a kept turn given up beside a getLock re-entry', () => {
  const context = useRedis();
  const [a, b, c] = [1, 2, 3].map(() => `${randomUUID()}:1`) as [string, string, string];
  const fair = new FairLockProtocol();
  const plain = new RLockProtocol();

  /**
   * A holds; B and C (C standing for a Java waiter: its queue and deadline entries, its
   * channel) queue; A unlocks; B's grant comes back late and its turn is kept; B re-enters
   * through an RLock handle (by the engine, or `direct`ly without an attempt context), then its
   * fair call gives up.
   */
  async function givenUpBesideReentry(name: string, direct = false): Promise<void> {
    const { redis, published } = context;
    await fair.acquire(redis, name, a, 30_000, waiting('a1'));
    await fair.acquire(redis, name, b, 30_000, waiting('b0'));
    await fair.acquire(redis, name, c, 30_000, waiting('c0'));
    await fair.release(redis, name, a, '30000');
    expect((await fair.acquire(redis, name, b, 30_000, waiting('b1'))).acquired).toBe(true);
    expect(await fair.undo(redis, name, b, '30000', 'b1', waiting('b1'))).toBe('held');
    const reentry = direct ? undefined : waiting('r1');
    expect(await plain.acquire(redis, name, b, 30_000, reentry)).toMatchObject({ holds: 2 });
    await fair.abandon(redis, name, b, waiting('b1'));
    expect(await redis.hgetall(name)).toEqual({ [b]: '1' });
    expect(await redis.lrange(`redisson_lock_queue:{${name}}`, 0, -1)).toEqual([c]);
    await published.take();
  }

  it("the re-entry's unlock wakes the fair waiter at the head on its own channel", async () => {
    const { redis, published } = context;
    await givenUpBesideReentry('given-up');
    expect(await plain.release(redis, 'given-up', b, '30000')).toBe('released');
    expect(await redis.exists('given-up')).toBe(0);
    expect(await published.take()).toEqual([
      { channel: 'redisson_lock__channel:{given-up}', message: '0' },
      { channel: `redisson_lock__channel:{given-up}:${c}`, message: '0' },
    ]);
    expect((await fair.acquire(redis, 'given-up', c, 30_000, waiting('c1'))).acquired).toBe(true);
  });

  it("the re-entry's undo wakes it too", async () => {
    const { redis, published } = context;
    await givenUpBesideReentry('undone');
    expect(await plain.undo(redis, 'undone', b, '30000', 'r1')).toBe('released');
    expect(await redis.exists('undone')).toBe(0);
    expect(await published.take()).toEqual([
      { channel: 'redisson_lock__channel:{undone}', message: '0' },
      { channel: `redisson_lock__channel:{undone}:${c}`, message: '0' },
    ]);
  });

  it('a re-entry taken and unlocked meanwhile leaves the wake-up to the last unlock', async () => {
    const { redis, published } = context;
    await givenUpBesideReentry('again');
    expect(await plain.acquire(redis, 'again', b, 30_000, waiting('r2'))).toMatchObject({ holds: 2 });
    expect(await plain.release(redis, 'again', b, '30000')).toBe('held');
    expect(await published.take()).toEqual([]);
    expect(await plain.release(redis, 'again', b, '30000')).toBe('released');
    expect(await published.take()).toEqual([
      { channel: 'redisson_lock__channel:{again}', message: '0' },
      { channel: `redisson_lock__channel:{again}:${c}`, message: '0' },
    ]);
  });

  it("a re-entry's direct call, which names no attempt, keeps the wake-up as long as its hold", async () => {
    const { redis, published } = context;
    await givenUpBesideReentry('direct', true);
    // The kept turn's latches ended with its grace (2 s); the re-entry's hold ends in 30 s.
    expect(await redis.pttl(`redisson_lock_attempt:{direct}:${b}`)).toBeGreaterThan(2_000);
    expect(await plain.release(redis, 'direct', b, '30000')).toBe('released');
    expect(await published.take()).toContainEqual({
      channel: `redisson_lock__channel:{direct}:${c}`,
      message: '0',
    });
  });
});
