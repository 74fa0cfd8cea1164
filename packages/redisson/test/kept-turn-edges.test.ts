import { randomUUID } from 'node:crypto';
import { waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { FairLockProtocol } from '../src/fair/protocol.js';
import { RLockProtocol } from '../src/lock/protocol.js';
import { useRedis } from './helpers/server.js';

const waiting = (attempt: string) => ({ wait: Number.POSITIVE_INFINITY, attempt });
const latchesOf = (name: string, owner: string) => `redisson_lock_attempt:{${name}}:${owner}`;

/** Edges of the fair lock's kept turn (fair/turn.lua) found in review, each reproduced first. */
describe('kept turn', () => {
  const context = useRedis();
  const [a, b, c] = [1, 2, 3].map(() => `${randomUUID()}:1`) as [string, string, string];

  /** A holds; B and C queue; A unlocks; B claims with attempt b1, and its undo keeps the turn. */
  async function keptTurnOf(
    fair: FairLockProtocol,
    redis: typeof context.redis,
    name: string,
  ): Promise<void> {
    await fair.acquire(redis, name, a, 30_000, waiting('a1'));
    await fair.acquire(redis, name, b, 30_000, waiting('b0'));
    await fair.acquire(redis, name, c, 30_000, waiting('c0'));
    await fair.release(redis, name, a, '30000');
    expect((await fair.acquire(redis, name, b, 30_000, waiting('b1'))).acquired).toBe(true);
  }

  it('a re-entry unlocked down to the kept grant leaves the latches to end with it, not with its lease', async () => {
    const { redis } = context;
    // Short, for the test to wait it out, yet long enough that the re-entry and its unlock after
    // the undo land within the kept grant on a loaded host (a 300 ms one could lapse first).
    const grace = 1_500;
    const fair = new FairLockProtocol({ turnGrace: grace });
    const plain = new RLockProtocol();
    await keptTurnOf(fair, redis, 'stale');
    expect(await fair.undo(redis, 'stale', b, '30000', 'b1')).toBe('held');
    expect(await plain.acquire(redis, 'stale', b, 30_000, waiting('r1'))).toMatchObject({ holds: 2 });
    expect(await plain.release(redis, 'stale', b, '30000')).toBe('held');
    expect(await redis.pttl(latchesOf('stale', b))).toBeLessThanOrEqual(grace);
    await waitFor('the kept grant lapsed', async () => (await redis.exists('stale')) === 0);
    // Latches outliving it would name the lapsed turn: a later hold would be cut to that turn's end.
    expect(await plain.acquire(redis, 'stale', b, 30_000)).toMatchObject({ holds: 1 });
    expect(await plain.acquire(redis, 'stale', b, 30_000, waiting('r2'))).toMatchObject({ holds: 2 });
    expect(await plain.release(redis, 'stale', b, '30000')).toBe('held');
    expect(await redis.pttl('stale')).toBeGreaterThan(1_000);
  });

  it('an undo by a user the ACL refuses TIME fails before it writes or publishes anything', async () => {
    const { redis: admin, server, published } = context;
    await admin.call('ACL', 'SETUSER', 'no-time', 'on', '>pw', '~*', '&*', '+@all', '-time');
    const redis = server.client({ username: 'no-time', password: 'pw' });
    const fair = new FairLockProtocol();
    await keptTurnOf(fair, redis, 'timed');
    await published.take();
    const before = {
      latches: await admin.lrange(latchesOf('timed', b), 0, -1),
      queue: await admin.lrange('redisson_lock_queue:{timed}', 0, -1),
      lock: await admin.hgetall('timed'),
    };
    await expect(fair.undo(redis, 'timed', b, '30000', 'b1')).rejects.toThrow(/can't run this command/);
    expect(await published.take()).toEqual([]);
    expect({
      latches: await admin.lrange(latchesOf('timed', b), 0, -1),
      queue: await admin.lrange('redisson_lock_queue:{timed}', 0, -1),
      lock: await admin.hgetall('timed'),
    }).toEqual(before);
    await redis.quit();
  });
});
