import {
  type ExtendEvent,
  InvalidKeyError,
  InvalidOptionError,
  LockAbortError,
  LockerClosedError,
  type LostEvent,
  lockEvents,
  NotOwnerError,
} from '@lock/core';
import { refusalHiding, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { chai, describe, expect, it } from 'vitest';
import { createRedisson, FairLockProtocol, NoThreadError, type Redisson } from '../src/index.js';
import { useRedisson } from './helpers/server.js';

/** Resolves after `count` watchdog renewals of `key`; rejects with the loss if the lock is lost first. */
function renewals(key: string, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    const stop = () => {
      lockEvents.extend.unsubscribe(onExtend);
      lockEvents.lost.unsubscribe(onLost);
    };
    const onExtend = (message: unknown) => {
      const event = message as ExtendEvent;
      if (event.key !== key || !event.renewal || ++seen < count) return;
      stop();
      resolve();
    };
    const onLost = (message: unknown) => {
      const event = message as LostEvent;
      if (event.key !== key) return;
      stop();
      reject(event.error);
    };
    lockEvents.extend.subscribe(onExtend);
    lockEvents.lost.subscribe(onLost);
  });
}

describe('createRedisson: the Java-shaped API on the engine', () => {
  let redis!: Redis;
  let redisson!: Redisson;
  useRedisson((setup) => {
    ({ redis, redisson } = setup);
  });

  it('has a new lowercase UUID per client and writes "<id>:<thread>" fields', async () => {
    const other = createRedisson({ redis });
    expect(redisson.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(other.id).not.toBe(redisson.id);
    await other.shutdown();
    const lock = redisson.getLock('orders:42');
    await redisson.run(async () => {
      await lock.lock();
      const [field] = Object.keys(await redis.hgetall('orders:42'));
      expect(field).toMatch(new RegExp(`^${redisson.id}:\\d+$`));
      await lock.unlock();
    });
    expect(await redis.exists('orders:42')).toBe(0);
  });

  it("printing a lock sends nothing to Redis: chai's printer calls a method named inspect", async () => {
    const lock = redisson.getFencedLock('printed');
    const before = await commandCalls(redis);
    chai.util.inspect(lock);
    expect(await commandCalls(redis)).toEqual(before);
  });

  it('lock then unlock inside run() works, and isHeldByCurrentThread follows it', async () => {
    const lock = redisson.getLock('plain');
    await redisson.run(async () => {
      await lock.lock();
      expect(await lock.isLocked()).toBe(true);
      expect(await lock.isHeldByCurrentThread()).toBe(true);
      expect(await lock.getHoldCount()).toBe(1);
      await lock.unlock();
      expect(await lock.isLocked()).toBe(false);
      expect(await lock.isHeldByCurrentThread()).toBe(false);
    });
  });

  it('every call that acts as the current thread is refused outside run() without a threadId, before any write', async () => {
    const lock = redisson.getLock('unchained');
    const fenced = redisson.getFencedLock('unchained');
    const calls = {
      lock: () => lock.lock(),
      tryLock: () => lock.tryLock(),
      unlock: () => lock.unlock(),
      isHeldByCurrentThread: () => lock.isHeldByCurrentThread(),
      getHoldCount: () => lock.getHoldCount(),
      lockAndGetToken: () => fenced.lockAndGetToken(),
      tryLockAndGetToken: () => fenced.tryLockAndGetToken(),
    };
    for (const [method, call] of Object.entries(calls)) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NoThreadError);
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ code: 'ERR_LOCK_INVALID_OPTION', option: 'threadId', method });
      expect((error as Error).message).toMatch(/redisson\.run/);
    }
    expect(await redis.dbsize()).toBe(0);
  });

  it('re-enters within one run() chain and counts holds like Java', async () => {
    const lock = redisson.getLock('reentrant');
    await redisson.run(async () => {
      await lock.lock();
      await lock.lock();
      expect(await lock.getHoldCount()).toBe(2);
      expect(Object.values(await redis.hgetall('reentrant'))).toEqual(['2']);
      await lock.unlock();
      expect(await lock.isLocked()).toBe(true);
      await lock.unlock();
    });
    expect(await lock.isLocked()).toBe(false);
  });

  it('two concurrent chains never re-enter each other: the second waits for the first unlock', async () => {
    const lock = redisson.getLock('exclusive');
    const order: string[] = [];
    let releaseFirst!: () => void;
    const firstMayUnlock = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const first = redisson.run(async () => {
      await lock.lock();
      order.push('first in');
      await firstMayUnlock;
      order.push('first out');
      await lock.unlock();
    });
    const second = redisson.run(async () => {
      while (!order.includes('first in')) await new Promise((resolve) => setImmediate(resolve));
      expect(await lock.tryLock()).toBe(false);
      const waiting = lock.lock().then(() => order.push('second in'));
      releaseFirst();
      await waiting;
      await lock.unlock();
    });
    await Promise.all([first, second]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
  });

  it('unlock by a thread that holds nothing throws NotOwnerError naming the owner, and changes nothing', async () => {
    const lock = redisson.getLock('guarded');
    await redisson.run(() => lock.lock());
    const error = await redisson.run(() => lock.unlock()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotOwnerError);
    expect((error as NotOwnerError).owner).toMatch(new RegExp(`^${redisson.id}:\\d+$`));
    expect(await lock.isLocked()).toBe(true);
    expect(await lock.forceUnlock()).toBe(true);
    expect(await lock.isLocked()).toBe(false);
  });

  it('an explicit threadId is the owner field, as with Redisson async calls', async () => {
    const lock = redisson.getLock('explicit');
    await lock.lock({ threadId: 42 });
    expect(await redis.hget('explicit', `${redisson.id}:42`)).toBe('1');
    expect(await lock.isHeldByThread(42)).toBe(true);
    await expect(lock.unlock({ threadId: 41 })).rejects.toBeInstanceOf(NotOwnerError);
    await lock.unlock({ threadId: 42 });
    expect(await redis.exists('explicit')).toBe(0);
  });

  it('a given lease is the PEXPIRE and a partial unlock re-applies that lease', async () => {
    const lock = redisson.getLock('leased');
    await redisson.run(async () => {
      await lock.lock({ lease: 10_000 });
      await lock.lock({ lease: 10_000 });
      await redis.pexpire('leased', 5_000);
      await lock.unlock();
      const ttl = await lock.remainTimeToLive();
      expect(ttl).toBeGreaterThan(9_000);
      expect(ttl).toBeLessThanOrEqual(10_000);
      await lock.unlock();
    });
    expect(await lock.remainTimeToLive()).toBe(-2);
  });

  it('tryLock with wait gives up with false after the wait, leaving the holder untouched', async () => {
    const lock = redisson.getLock('busy');
    await lock.lock({ threadId: 1 });
    expect(await lock.tryLock({ wait: 100, threadId: 2 })).toBe(false);
    expect(await redis.hget('busy', `${redisson.id}:1`)).toBe('1');
    await lock.unlock({ threadId: 1 });
  });

  it('refuses bad input before anything is written', async () => {
    expect(() => redisson.getLock('')).toThrow(InvalidKeyError);
    const lock = redisson.getLock('checked');
    await expect(lock.lock({ lease: -5 })).rejects.toThrow(/lease.*-5/);
    await expect(lock.lock({ threadId: 1.5 })).rejects.toBeInstanceOf(InvalidOptionError);
    await expect(lock.tryLock({ wait: -1 })).rejects.toThrow(
      'invalid option "wait": -1 (expected a whole number of ms from 0 (one attempt) to 2147483647)',
    );
    expect(() => createRedisson({ redis, lockWatchdogTimeout: 0 })).toThrow(/lockWatchdogTimeout/);
    expect(await redis.dbsize()).toBe(0);
  });

  it('refuses every unknown option by name, and points Redisson names to ours, before anything is written', async () => {
    const lock = redisson.getLock('named');
    const refusal = (call: () => unknown) =>
      (async () => call())().then(
        () => null,
        (error: unknown) => error as InvalidOptionError,
      );
    const cases: [call: () => unknown, option: string, hint: RegExp][] = [
      [
        () => lock.tryLock({ timeout: 1 } as never),
        'timeout',
        /^unknown option "timeout" \(expected one of the tryLock\(\) options: wait, lease, signal, threadId; Redisson's timeout is wait here, in ms\)\. Did you mean "wait"\?$/,
      ],
      [() => lock.tryLock({ waitTime: 1_000, threadId: 1 } as never), 'waitTime', /Did you mean "wait"\?$/],
      [
        () => lock.lock({ leaseTime: 1_000, threadId: 1 } as never),
        'leaseTime',
        /; Redisson's leaseTime is lease here, in ms\)\. Did you mean "lease"\?$/,
      ],
      [
        () => lock.lock({ wait: 1_000, threadId: 1 } as never),
        'wait',
        /^unknown option "wait" \(expected one of the lock\(\) options: lease, signal, threadId; lock\(\) waits as long as it takes: for a bounded wait, call tryLock\(\{ wait \}\) instead\)$/,
      ],
      [
        () => redisson.getFencedLock('named').lockAndGetToken({ wait: 1_000 } as never),
        'wait',
        /; lockAndGetToken\(\) waits as long as it takes: for a bounded wait, call tryLockAndGetToken\(\{ wait \}\) instead\)$/,
      ],
      [() => lock.lock({ unit: 'SECONDS', threadId: 1 } as never), 'unit', /every duration is in ms\)$/],
      [
        () => lock.tryLock({ threadId: 1, leese: 5 } as never),
        'leese',
        /one of the tryLock\(\) options: wait, lease/,
      ],
      [() => lock.unlock({ threadId: 1, lease: 5 } as never), 'lease', /unlock\(\) options: threadId\)$/],
      // A Redisson name of an option this method does not take: the note, and no name to write instead.
      [
        () => lock.unlock({ threadId: 1, leaseTime: 5 } as never),
        'leaseTime',
        /^unknown option "leaseTime" \(expected one of the unlock\(\) options: threadId; Redisson's leaseTime is lease here, in ms\)$/,
      ],
      [() => lock.getHoldCount({ thread: 1 } as never), 'thread', /threadId/],
      [() => lock.lock('fast' as never), 'options', /an object/],
      [
        () => redisson.getFencedLock('named').lockAndGetToken({ leaseTime: 1 } as never),
        'leaseTime',
        /Did you mean "lease"\?$/,
      ],
      [() => createRedisson({ redis, nameMapper: {} } as never), 'nameMapper', /Did you mean "prefix"\?$/],
      [
        () => createRedisson({ redis, timeout: 3_000 } as never),
        'timeout',
        /^unknown option "timeout" \(expected one of the createRedisson\(\) options: .*\)\. Did you mean "commandTimeout"\?$/,
      ],
      [
        () => new FairLockProtocol({ waitTimout: 5_000 } as never),
        'waitTimout',
        /^unknown option "waitTimout" \(expected one of the FairLockProtocol options: waitTimeout, turnGrace, now\)\. Did you mean "waitTimeout"\?$/,
      ],
    ];
    for (const [call, option, hint] of cases) {
      const error = await refusal(call);
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error?.option).toBe(option);
      expect(error?.message).toMatch(hint);
    }
    expect(await redis.dbsize()).toBe(0);
  });

  it('never shows or keeps the value of an unknown option, and suggests the name a typo stands for', async () => {
    const secret = 'hunter2-not-to-be-logged';
    const created = await refusalHiding(secret, () =>
      createRedisson({ redis, comandTimeout: secret } as never),
    );
    expect(created).toBeInstanceOf(InvalidOptionError);
    expect(created).toMatchObject({ option: 'comandTimeout', value: undefined });
    expect(created.message).toMatch(
      /^unknown option "comandTimeout" \(expected one of the createRedisson\(\) options: redis, .*\)\. Did you mean "commandTimeout"\?$/,
    );
    const lock = redisson.getLock('named');
    const typo = await refusalHiding(secret, () => lock.tryLock({ threadId: 1, leese: secret } as never));
    expect(typo.message).toBe(
      'unknown option "leese" (expected one of the tryLock() options: wait, lease, signal, threadId). Did you mean "lease"?',
    );
    const renamed = await refusalHiding(secret, () => lock.lock({ threadId: 1, leaseTime: secret } as never));
    expect(renamed.message).toMatch(/Did you mean "lease"\?$/);
    expect(await redis.dbsize()).toBe(0);
  });

  it('the watchdog keeps a lock taken without a lease alive past its lease', async () => {
    const short = createRedisson({ redis, lockWatchdogTimeout: 3_000 });
    const lock = short.getLock('watched');
    await lock.lock({ threadId: 1 });
    // The only lock of its locker is renewed about a third of its lease after the last renewal:
    // after four renewals its first lease has ended. A loss on the way fails the test at once.
    await renewals('watched', 4);
    expect(await lock.isLocked()).toBe(true);
    expect(await lock.remainTimeToLive()).toBeGreaterThan(0);
    await lock.unlock({ threadId: 1 });
    await short.shutdown();
  });

  it('a lock lost while held (forceUnlock elsewhere) makes unlock throw, never an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const short = createRedisson({ redis, lockWatchdogTimeout: 600 });
    try {
      const lock = short.getLock('lost');
      const noticed = new Promise<unknown>((resolve) => {
        const onLost = (event: unknown) => {
          if ((event as { key: string }).key !== 'lost') return;
          lockEvents.lost.unsubscribe(onLost);
          resolve(event);
        };
        lockEvents.lost.subscribe(onLost);
      });
      await lock.lock({ threadId: 1 });
      expect(await redisson.getLock('lost').forceUnlock()).toBe(true);
      // The next renewal (every 200 ms) finds the field gone: the hold is lost, the key not re-created.
      expect(await noticed).toMatchObject({ reason: 'taken' });
      expect(await redis.exists('lost')).toBe(0);
      await expect(lock.unlock({ threadId: 1 })).rejects.toBeInstanceOf(NotOwnerError);
    } finally {
      await short.shutdown();
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });

  it('an aborted fair-lock waiter rejects with LockAbortError and leaves the queue', async () => {
    const fair = redisson.getFairLock('fair:abort');
    await fair.lock({ threadId: 1 });
    const controller = new AbortController();
    const waiting = fair.lock({ threadId: 2, signal: controller.signal }).catch((error: unknown) => error);
    await waitFor(
      'the waiter queued',
      async () => (await redis.llen('redisson_lock_queue:{fair:abort}')) === 1,
    );
    controller.abort();
    expect(await waiting).toBeInstanceOf(LockAbortError);
    // The abort does not wait for its cleanup; its queue deadline is the 5-minute allowance away.
    await waitFor(
      'the waiter to leave the queue',
      async () =>
        (await redis.exists('redisson_lock_queue:{fair:abort}', 'redisson_lock_timeout:{fair:abort}')) === 0,
    );
    await fair.unlock({ threadId: 1 });
    // The unlock's latch stays for its PX, so that a retried unlock finds it; the acquire's went with the hold.
    const left = (await redis.keys('*')).filter((key) => !/^redisson_unlock_latch:\{fair:abort\}:/.test(key));
    expect(left).toEqual(['redisson_lock_token:{fair:abort}']);
  });

  it('a fair-lock waiter whose client shuts down rejects with LockerClosedError and leaves the queue', async () => {
    const queue = 'redisson_lock_queue:{fair:close}';
    const fair = redisson.getFairLock('fair:close');
    await fair.lock({ threadId: 1 });
    const closing = createRedisson({ redis });
    const waiting = closing
      .getFairLock('fair:close')
      .lock({ threadId: 2 })
      .catch((error: unknown) => error);
    await waitFor('the waiter queued', async () => (await redis.llen(queue)) === 1);
    await closing.shutdown();
    expect(await waiting).toBeInstanceOf(LockerClosedError);
    expect(await redis.exists(queue, 'redisson_lock_timeout:{fair:close}')).toBe(0);
    await fair.unlock({ threadId: 1 });
  });
});

/** Calls per command the server has run so far, INFO's own left out. */
async function commandCalls(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats');
  const calls = [...info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].filter(([, name]) => name !== 'info');
  return Object.fromEntries(calls.map(([, name, count]) => [name, Number(count)]));
}
