import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson, type RLock } from '../src/index.js';
import { useRedis } from './helpers/server.js';

/**
 * Java's RLock unlock touches the lock hash and its channel only. A user the ACL keeps to the
 * keys an RLock or fenced lock needs (none of the fair lock's queue keys) locks, re-enters and
 * unlocks here as it does in Java (the channel is among its keys, as in Java's script).
 */
describe('an RLock used by a user the ACL keeps off the fair lock keys', () => {
  const context = useRedis();
  let redisson!: Redisson;

  beforeAll(async () => {
    await context.server
      .client()
      .call(
        'ACL',
        'SETUSER',
        'rlockonly',
        'on',
        '>pw',
        '~plain:*',
        '~redisson_lock_token:*',
        '~redisson_lock__channel:*',
        '~redisson_lock_attempt:*',
        '~redisson_unlock_latch:*',
        '&*',
        '+@all',
      );
    redisson = createRedisson({ redis: context.server.client({ username: 'rlockonly', password: 'pw' }) });
  });
  afterAll(() => redisson.shutdown());

  const kinds: [kind: string, lock: (name: string) => RLock][] = [
    ['RLock', (name) => redisson.getLock(name)],
    ['fenced lock', (name) => redisson.getFencedLock(name)],
  ];

  it.each(kinds)('%s: a partial and a last unlock succeed', async (kind, make) => {
    const lock = make(`plain:${kind}`);
    await lock.lock({ threadId: 1 });
    await lock.lock({ threadId: 1 });
    await lock.unlock({ threadId: 1 });
    expect(await lock.isHeldByThread(1)).toBe(true);
    await lock.unlock({ threadId: 1 });
    expect(await context.redis.exists(lock.name)).toBe(0);
  });
});
