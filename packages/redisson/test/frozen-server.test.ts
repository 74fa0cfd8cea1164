import { type LostEvent, lockEvents, NotOwnerError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { keysWithoutTtl } from '../../core/test/contract/keys.js';
import { createRedisson } from '../src/index.js';

/** The lease of locks taken without one, renewed every third of it: short, to keep the test fast. */
const WATCHDOG = 1_500;

/**
 * S8 for Redisson's kinds: the server freezes (DEBUG SLEEP) for twice a watchdog lease, so no
 * renewal can land. The holder must learn it has lost each lock from its own clock while Redis
 * still sleeps, and once Redis wakes with the leases run out, another thread takes them and the
 * first thread's unlock is refused, as Java's IllegalMonitorStateException would be.
 */
it('a server frozen past the watchdog lease: each hold is lost before Redis wakes, and another thread takes it', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  const lost = new Map<string, number>();
  const onLost = (message: unknown) => lost.set((message as LostEvent).key, performance.now());
  process.on('unhandledRejection', onUnhandled);
  lockEvents.lost.subscribe(onLost);
  await using server = await startRedis();
  const redis = server.client();
  const redisson = createRedisson({ redis, lockWatchdogTimeout: WATCHDOG });
  try {
    const locks = [
      redisson.getLock('frozen:rlock'),
      redisson.getFairLock('frozen:fair'),
      redisson.getReadWriteLock('frozen:rw').writeLock(),
    ];
    for (const lock of locks) await lock.lock({ threadId: 1 });

    const wokeAt = await server.debugSleep(2 * WATCHDOG).then(() => performance.now());

    expect([...lost.keys()].sort()).toEqual(['frozen:fair', 'frozen:rlock', 'frozen:rw']);
    for (const at of lost.values()) expect(at).toBeLessThan(wokeAt);
    expect(await Promise.all(locks.map((lock) => lock.tryLock({ threadId: 2 })))).toEqual([true, true, true]);
    for (const lock of locks) {
      await expect(lock.unlock({ threadId: 1 })).rejects.toBeInstanceOf(NotOwnerError);
    }
    expect((await keysWithoutTtl(redis)).filter((key) => !key.startsWith('redisson_lock_token:'))).toEqual(
      [],
    );
    for (const lock of locks) await lock.unlock({ threadId: 2 });
    expect(await Promise.all(locks.map((lock) => lock.isLocked()))).toEqual([false, false, false]);
  } finally {
    await redisson.shutdown();
    lockEvents.lost.unsubscribe(onLost);
    process.off('unhandledRejection', onUnhandled);
  }
  expect(unhandled).toEqual([]);
}, 30_000);
