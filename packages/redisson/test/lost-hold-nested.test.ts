import { type LostEvent, lockEvents } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRedisson, type Redisson } from '../src/index.js';

type Kind = [string, (redisson: Redisson, name: string) => ReturnType<Redisson['getLock']>];

const KINDS: Kind[] = [
  ['RLock', (redisson, name) => redisson.getLock(name)],
  ['fair lock', (redisson, name) => redisson.getFairLock(name)],
  ['fenced lock', (redisson, name) => redisson.getFencedLock(name)],
  ['read lock', (redisson, name) => redisson.getReadWriteLock(name).readLock() as never],
  ['write lock', (redisson, name) => redisson.getReadWriteLock(name).writeLock() as never],
];

const lost: string[] = [];
const onLost = (message: unknown) => lost.push((message as LostEvent).key);
beforeAll(() => lockEvents.lost.subscribe(onLost));
afterAll(() => lockEvents.lost.unsubscribe(onLost));

/**
 * A thread's hold ended by a master change (here a restart whose appendonly file kept the hash)
 * is undone by the attempt that took it. The field's attempt list keeps as many attempts as the
 * field has holds, so every unlock takes its own attempt out: otherwise the nested lock/unlock
 * pairs made inside the hold would push the outer attempt out, and its count would stay.
 */
it.each(KINDS)(
  '%s: a hold lost to a restart that kept it is given back after nested tryLock/unlock and lock/unlock pairs',
  async (_kind, get) => {
    await using server = await startRedis({ persistence: true });
    await using proxied = await proxiedClient(server);
    const admin = server.client();
    const redisson = createRedisson({ redis: proxied.redis });
    const other = createRedisson({ redis: server.client() });
    try {
      lost.length = 0;
      const lock = get(redisson, 'nested');
      await lock.lock({ threadId: 1 });
      // A re-entry that may not wait first (the fair lock records its attempt in another form).
      expect(await lock.tryLock({ threadId: 1 })).toBe(true);
      await lock.unlock({ threadId: 1 });
      for (let i = 0; i < 3; i += 1) {
        await lock.lock({ threadId: 1 });
        await lock.unlock({ threadId: 1 });
      }
      // The holder hears of the restart only once the proxy passes: the appendonly file kept the hold.
      proxied.proxy.blackhole();
      await server.restart();
      expect(Object.values(await admin.hgetall('nested'))).toContain('1');
      proxied.proxy.pass();
      await waitFor('the hold to be lost', async () => {
        await lock.isLocked().catch(() => undefined);
        return lost.includes('nested');
      });
      // The thread locks again and unlocks: the name is then free for everyone else.
      await lock.lock({ threadId: 1 });
      await lock.unlock({ threadId: 1 });
      await waitFor('the name to be free', async () => (await admin.exists('nested')) === 0, {
        timeout: 5_000,
      });
      // Its client may still be reconnecting after the restart: a single try could find it unready.
      expect(await get(other, 'nested').tryLock({ threadId: 7, wait: 5_000 })).toBe(true);
    } finally {
      await Promise.all([redisson.shutdown(), other.shutdown()]);
    }
  },
  30_000,
);
