import { LockUnavailableError } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { createRedisson, type Redisson, type RLock } from '../src/index.js';

/**
 * A thread's attempt answered after `commandTimeout` is undone when its grant comes back (the
 * owner `<uuid>:<thread>` is not fresh). By then that grant's lease may have ended and the same
 * thread taken the lock again: the undo must take off only a hold that attempt counted, never
 * the thread's next one, or another client takes the lock while the thread believes it holds it.
 */
const kinds: [
  kind: string,
  lock: (redisson: Redisson, name: string) => RLock,
  rival: (redisson: Redisson, name: string) => RLock,
][] = [
  ['RLock', (redisson, name) => redisson.getLock(name), (redisson, name) => redisson.getLock(name)],
  [
    'fenced lock',
    (redisson, name) => redisson.getFencedLock(name),
    (redisson, name) => redisson.getFencedLock(name),
  ],
  [
    'write lock',
    (redisson, name) => redisson.getReadWriteLock(name).writeLock(),
    (redisson, name) => redisson.getReadWriteLock(name).writeLock(),
  ],
  [
    'read lock',
    (redisson, name) => redisson.getReadWriteLock(name).readLock(),
    (redisson, name) => redisson.getReadWriteLock(name).writeLock(),
  ],
];

it.each(kinds)(
  "%s: the undo of a grant answered after its lease ended leaves the thread's next hold alone",
  async (kind, make, rival) => {
    await using server = await startRedis();
    await using proxied = await proxiedClient(server);
    const admin = server.client();
    const slow = createRedisson({ redis: proxied.redis, commandTimeout: 1_000 });
    const other = createRedisson({ redis: server.client() });
    const name = `late:${kind}`;
    const lock = make(slow, name);
    // The scripts are loaded first: a NOSCRIPT answer would hold nothing back.
    await lock.lock({ threadId: 1 });
    await lock.unlock({ threadId: 1 });
    // The first grant is seen by its keyspace event (the PEXPIRE of its lease), not by polling
    // the key: its 300 ms lease may end before a loaded host's next check, which would then
    // wait for a key that is gone.
    await admin.config('SET', 'notify-keyspace-events', 'Kg');
    const events = server.client();
    const written: string[] = [];
    events.on('message', (_channel: string, event: string) => written.push(event));
    await events.subscribe(`__keyspace@0__:${name}`);
    // Replies held back: requests still reach Redis.
    proxied.proxy.delay({ downstream: 60_000 });
    const first = lock.tryLock({ threadId: 1, lease: 300 });
    await waitFor('the first attempt applied', async () => written.includes('expire'), { interval: 5 });
    await expect(first).rejects.toBeInstanceOf(LockUnavailableError);
    await waitFor('the first grant expired', async () => (await admin.exists(name)) === 0, {
      interval: 5,
    });
    const second = lock.tryLock({ threadId: 1, lease: 20_000 });
    await waitFor('the second attempt applied', async () => (await admin.exists(name)) === 1, {
      interval: 5,
    });
    // Both answers come now: the first (a grant given up on: undone), then the second (in time).
    proxied.proxy.pass();
    expect(await second).toBe(true);
    // Behind the undo sent on the late grant, on the same connection: once answered, it has run.
    await proxied.redis.ping();
    await proxied.redis.ping();
    expect(await lock.getHoldCount({ threadId: 1 }), "the thread's next hold was taken off under it").toBe(1);
    expect(await rival(other, name).tryLock({ threadId: 1 })).toBe(false);
    expect(await lock.isHeldByThread(1)).toBe(true);
    await lock.unlock({ threadId: 1 });
    expect(await admin.exists(name)).toBe(0);
    events.disconnect();
    await Promise.all([slow.shutdown(), other.shutdown()]);
  },
  30_000,
);
