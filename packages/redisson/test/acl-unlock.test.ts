import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson, type RLock } from '../src/index.js';
import { dump } from './helpers/observe.js';
import { useRedis } from './helpers/server.js';
import { JavaPeer } from './peer/java-peer.js';

/** The keys with their types and values, without the PTTLs that tick down between two looks. */
async function contents(redis: Redis): Promise<Record<string, unknown>> {
  const keys = await dump(redis);
  return Object.fromEntries(Object.entries(keys).map(([key, { type, value }]) => [key, { type, value }]));
}

/**
 * Audit D5: a user the ACL lets run scripts but not publish (`~* resetchannels +@all`). An
 * unlock's PUBLISH then fails; it used to come after the DEL, which stayed done: the caller saw
 * an error while the lock was free, and a retry, finding no unlock latch, got NotOwnerError. A
 * failing unlock must change nothing, so that the caller's error is the truth and a retry, once
 * the user may publish, frees the lock.
 */
describe('an unlock by a user the ACL refuses the channel fails without freeing the lock', () => {
  const context = useRedis();
  let admin!: Redis;
  let redisson!: Redisson;
  let peer!: JavaPeer;

  beforeAll(async () => {
    admin = context.server.client();
    await admin.call('ACL', 'SETUSER', 'nochan', 'on', '>pw', '~*', 'resetchannels', '+@all');
    redisson = createRedisson({ redis: context.server.client({ username: 'nochan', password: 'pw' }) });
    peer = new JavaPeer(context.server.client(), context.server.client());
  });
  afterAll(() => redisson.shutdown());
  beforeEach(async () => {
    await admin.call('ACL', 'SETUSER', 'nochan', 'resetchannels');
  });

  const grantChannels = () => admin.call('ACL', 'SETUSER', 'nochan', 'allchannels');

  /** Each kind, the channel its release publishes on, and who waits so that it publishes at all. */
  const kinds: [
    kind: string,
    lock: (name: string) => RLock,
    channel: (name: string) => string,
    queue: (name: string) => Promise<unknown>,
  ][] = [
    ['RLock', (name) => redisson.getLock(name), (name) => `redisson_lock__channel:{${name}}`, async () => {}],
    [
      'fenced lock',
      (name) => redisson.getFencedLock(name),
      (name) => `redisson_lock__channel:{${name}}`,
      async () => {},
    ],
    [
      'fair lock',
      (name) => redisson.getFairLock(name),
      // A fair release wakes only the head of the queue: a Java waiter there.
      (name) => `redisson_lock__channel:{${name}}:${peer.owner(9)}`,
      (name) => peer.fairTryLockOnce(name, 9),
    ],
    [
      'write lock',
      (name) => redisson.getReadWriteLock(name).writeLock(),
      (name) => `redisson_rwlock:{${name}}`,
      async () => {},
    ],
    [
      'read lock',
      (name) => redisson.getReadWriteLock(name).readLock(),
      (name) => `redisson_rwlock:{${name}}`,
      async () => {},
    ],
  ];

  it.each(kinds)(
    '%s: unlock() fails with nothing changed, and succeeds once retried with the channel allowed',
    async (kind, make, channel, queue) => {
      const lock = make(`acl:${kind}`);
      await lock.lock({ threadId: 1 });
      await queue(lock.name);
      const before = await contents(admin);
      const error = await lock.unlock({ threadId: 1 }).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/can't publish to the channel/);
      expect(await contents(admin)).toEqual(before);
      expect(await context.published.take()).toEqual([]);
      expect(await lock.isHeldByThread(1)).toBe(true);

      await grantChannels();
      await lock.unlock({ threadId: 1 });
      expect(await admin.exists(lock.name)).toBe(0);
      expect(await context.published.take()).toEqual([
        { channel: channel(lock.name), message: expect.any(String) },
      ]);
    },
  );

  it.each(kinds)(
    '%s: forceUnlock() fails with nothing changed, and succeeds once the channel is allowed',
    async (kind, make, channel, queue) => {
      const lock = make(`acl-force:${kind}`);
      await lock.lock({ threadId: 1 });
      await queue(lock.name);
      const before = await contents(admin);
      await expect(lock.forceUnlock()).rejects.toThrow(/can't publish to the channel/);
      expect(await contents(admin)).toEqual(before);
      expect(await context.published.take()).toEqual([]);

      await grantChannels();
      expect(await lock.forceUnlock()).toBe(true);
      expect(await admin.exists(lock.name)).toBe(0);
      expect(await context.published.take()).toEqual([
        { channel: channel(lock.name), message: expect.any(String) },
      ]);
    },
  );
});
