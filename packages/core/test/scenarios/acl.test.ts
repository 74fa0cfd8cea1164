import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, type ExtendEvent, type Locker, type RenewEvent } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { type AclProtocol, setAclUser } from './support/acl.js';

/**
 * S27: an ACL user limited to the lock key patterns and the commands each protocol needs (the
 * lists live in `support/acl.ts`, shared with `acl-contract.test.ts`, which runs the whole
 * contract suite under the same user).
 */
let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
  const admin = server.client();
  for (const protocol of ['token', 'legacy'] as const)
    await setAclUser(admin, protocol, 'locker-pw', protocol);
  return () => server.stop();
});

/**
 * Resolves after `count` watchdog renewals of `key` that succeeded (`lock:extend` with
 * `renewal: true`) by a `protocol` locker; rejects as soon as a renewal round of that protocol
 * fails (`lock:renew` with `failed: true`).
 */
function renewalsSucceed(count: number, key: string, protocol: AclProtocol): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    const settle = (outcome: () => void) => {
      unsubscribe('lock:extend', onExtend);
      unsubscribe('lock:renew', onRenew);
      outcome();
    };
    const onExtend = (message: unknown) => {
      const event = message as ExtendEvent;
      if (event.renewal && event.key === key && event.protocol === protocol && ++seen === count)
        settle(resolve);
    };
    const onRenew = (message: unknown) => {
      const event = message as RenewEvent;
      if (event.failed && event.protocol === protocol)
        settle(() => reject(new Error(`a renewal round failed after ${seen} renewals of ${key}`)));
    };
    subscribe('lock:extend', onExtend);
    subscribe('lock:renew', onRenew);
  });
}

function lockerAs(protocol: AclProtocol): Locker {
  const redis = server.client({ username: protocol, password: 'locker-pw' });
  return createLocker({ redis, protocol, ttl: 900 });
}

describe.each(['token', 'legacy'] as const)(
  'S27: an ACL user limited to its key pattern and these commands, %s protocol',
  (protocol) => {
    it('acquires, waits (woken by the release message), renews, inspects and releases', async () => {
      const a = lockerAs(protocol);
      const b = lockerAs(protocol);
      const lock = await a.acquire('app:1');
      expect(await a.isLocked('app:1')).toBe(true);
      expect((await a.inspect('app:1')).held).toBe(true);
      await expect(b.tryAcquire('app:1')).resolves.toBeNull();
      const waiting = b.acquire('app:1', { wait: 10_000 });
      // Awaited below; this keeps an early failure of the test from leaving it unhandled.
      waiting.catch(() => {});
      await lock.extend();
      // Renewed by the watchdog (every ttl/3) for longer than one lease: four successful renewals,
      // with no renewal round failing (a NOPERM renewal would be retried until the lease ran out).
      await renewalsSucceed(4, 'app:1', protocol);
      lock.assertHeld();
      expect(await a.inspect('app:1')).toMatchObject({ held: true, owner: lock.owner });
      await lock.release();
      const next = await waiting;
      expect(next.fence).toBeGreaterThan(lock.fence);
      await next.release();
      await a.close();
      await b.close();
    });

    it('is refused (NOPERM) on a name outside its pattern, and writes nothing there', async () => {
      const a = lockerAs(protocol);
      await expect(a.acquire('other:1', { wait: 0 })).rejects.toThrow(/NOPERM/);
      expect(await server.client().keys('*other*')).toEqual([]);
      await a.close();
    });
  },
);
