import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson, type RLock } from '../src/index.js';
import { dump } from './helpers/observe.js';
import { useRedis } from './helpers/server.js';

/**
 * Redis keeps what a script wrote before a command the ACL refuses. A user allowed HINCRBY, HSET
 * and LPUSH but not PEXPIRE must be refused before the first write: otherwise the lock hash and
 * the attempt latches stay without a TTL, held by nobody, until deleted by hand.
 */
describe('an acquisition by a user the ACL refuses PEXPIRE writes nothing', () => {
  const context = useRedis();
  let admin!: Redis;
  let refused!: Redisson;
  let full!: Redisson;

  beforeAll(async () => {
    admin = context.server.client();
    await admin.call('ACL', 'SETUSER', 'noexpire', 'on', '>pw', '~*', '&*', '+@all', '-pexpire');
    refused = createRedisson({ redis: context.server.client({ username: 'noexpire', password: 'pw' }) });
    full = createRedisson({ redis: context.server.client() });
  });
  afterAll(async () => {
    await refused.shutdown();
    await full.shutdown();
  });

  const kinds: [kind: string, lock: (redisson: Redisson, name: string) => RLock][] = [
    ['RLock', (redisson, name) => redisson.getLock(name)],
    ['fenced lock', (redisson, name) => redisson.getFencedLock(name)],
    ['fair lock', (redisson, name) => redisson.getFairLock(name)],
    ['write lock', (redisson, name) => redisson.getReadWriteLock(name).writeLock()],
    ['read lock', (redisson, name) => redisson.getReadWriteLock(name).readLock()],
  ];

  it.each(kinds)('%s: rejects with NOPERM and leaves no key', async (kind, make) => {
    const error = await make(refused, `noexpire:${kind}`)
      .tryLock({ threadId: 1 })
      .catch((e: unknown) => e);
    expect(String(error)).toMatch(/NOPERM.*PEXPIRE/);
    expect(await dump(admin)).toEqual({});
  });

  it.each(kinds)('%s: a waiting attempt on a held lock rejects and queues nothing', async (kind, make) => {
    const name = `noexpire-held:${kind}`;
    await make(full, name).lock({ threadId: 1 });
    const before = await dump(admin);
    const error = await make(refused, name)
      .tryLock({ threadId: 1, wait: 200 })
      .catch((e: unknown) => e);
    expect(String(error)).toMatch(/NOPERM.*PEXPIRE/);
    const after = await dump(admin);
    expect(Object.keys(after)).toEqual(Object.keys(before));
    // The counter never expires, here as in Java; every other key does.
    const expiring = Object.entries(after).filter(([key]) => !key.startsWith('redisson_lock_token:'));
    expect(expiring.filter(([, { pttl }]) => pttl <= 0)).toEqual([]);
    await make(full, name).unlock({ threadId: 1 });
  });
});
