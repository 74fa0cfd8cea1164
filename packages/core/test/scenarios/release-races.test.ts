import {
  createLocker,
  type Lock,
  LockLostError,
  type LockProtocol,
  LockUnavailableError,
  legacyProtocol,
  NotOwnerError,
  tokenProtocol,
} from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { renewals } from '../support/renewals.js';
import { within } from '../support/settle.js';
import { countScripts, until } from '../support/waiter-queue.js';

const PROTOCOLS: [string, () => LockProtocol][] = [
  ['token', () => tokenProtocol()],
  ['legacy', () => legacyProtocol({ unit: 'ms' })],
];

/** A locker whose connection runs through a fault proxy, and an observer connected directly. */
async function proxied(protocol: () => LockProtocol, commandTimeout: number, ttl?: number) {
  const server = await startRedis();
  const { proxy, redis, close } = await proxiedClient(server);
  const locker = createLocker({ redis, protocol: protocol(), replication: false, commandTimeout, ttl });
  const observer = createLocker({ redis: server.client(), protocol: protocol(), replication: false });
  // The scripts are loaded first: a NOSCRIPT answer would be delayed too, and nothing would land.
  const warm = await locker.acquire('warm', { ttl: 10_000 });
  await warm.extend(10_000);
  await warm.release();
  return {
    proxy,
    redis,
    locker,
    observer,
    async [Symbol.asyncDispose]() {
      await locker.close();
      await observer.close();
      await close();
      await server.stop();
    },
  };
}

describe.each(PROTOCOLS)(
  'a %s lock released while another operation of its hold is in flight',
  (_, protocol) => {
    it('a re-entry granted while the last handle’s release waits its turn keeps the hold, renewed', async () => {
      await using server = await startRedis();
      const locker = createLocker({
        redis: server.client(),
        protocol: protocol(),
        replication: false,
        ttl: 600,
      });
      const observer = createLocker({ redis: server.client(), protocol: protocol(), replication: false });
      try {
        let inner: Promise<Lock> | undefined;
        await locker.using('reentered', async () => {
          // A task that outlives the section: its re-entry is on the wire when the section's
          // release is called, and that release queues behind it.
          inner = locker.acquire('reentered');
        });
        const lock = await inner!;
        expect(lock.holds).toBe(2);
        // Three renewals of a 600 ms lease: the key would have expired without them.
        await within(renewals(3, 'reentered'), 5_000, 'three renewals of the re-entered hold');
        expect(await observer.inspect('reentered')).toMatchObject({
          held: true,
          owner: lock.owner,
          holds: 1,
        });
        expect(lock.remaining()).toBeGreaterThan(0);
        expect(await lock.release()).toBe('released');
        expect((await observer.inspect('reentered')).held).toBe(false);
      } finally {
        await locker.close();
        await observer.close();
      }
    });

    it('close() while a release waits behind an extend still frees the lock', async () => {
      await using run = await proxied(protocol, 2_000);
      const lock = await run.locker.acquire('closing', { ttl: 10_000 });
      run.proxy.delay({ downstream: 200 });
      const extended = expect(lock.extend(10_000)).rejects.toBeInstanceOf(LockLostError);
      const releasing = lock.release();
      await run.locker.close();
      await extended;
      expect(await releasing).toBe('released');
      run.proxy.pass();
      expect((await run.observer.inspect('closing')).held).toBe(false);
    });

    it('close() while an extend is in flight releases with the token that extend leaves', async () => {
      await using run = await proxied(protocol, 2_000);
      const lock = await run.locker.acquire('closing', { ttl: 10_000 });
      run.proxy.delay({ downstream: 200 });
      const extended = expect(lock.extend(10_000)).rejects.toBeInstanceOf(LockLostError);
      await run.locker.close();
      await extended;
      run.proxy.pass();
      expect((await run.observer.inspect('closing')).held).toBe(false);
    });

    it('close() while a renewal is in flight releases with the token that renewal leaves', async () => {
      await using run = await proxied(protocol, 2_000, 900);
      const sent = countScripts(run.redis);
      const lock = await run.locker.acquire('renewing');
      run.proxy.delay({ downstream: 300 });
      const before = sent();
      // The watchdog renews a 900 ms lease 300 ms after it was taken; its answer is then on its way.
      await until(async () => sent() > before, 'a renewal sent');
      await run.locker.close();
      expect(lock.released).toBe(true);
      run.proxy.pass();
      expect((await run.observer.inspect('renewing')).held).toBe(false);
    });

    it('a release that timed out but landed leaves the handle vouching for nothing', async () => {
      await using run = await proxied(protocol, 300);
      const lock = await run.locker.acquire('late', { ttl: 10_000 });
      run.proxy.delay({ downstream: 1_000 });
      await expect(lock.release()).rejects.toBeInstanceOf(LockUnavailableError);
      await waitFor('the release to land', async () => !(await run.observer.isLocked('late')), {
        timeout: 5_000,
      });
      expect(lock.remaining()).toBe(0);
      expect(() => lock.assertHeld()).toThrow(NotOwnerError);
      await expect(lock.extend()).rejects.toBeInstanceOf(NotOwnerError);
      run.proxy.pass();
      expect(await lock.release()).toBe('released');
    });

    it('an extend to a shorter lease that timed out but landed leaves no validity past the key’s expiry', async () => {
      await using run = await proxied(protocol, 300);
      const lock = await run.locker.acquire('shorter', { ttl: 10_000 });
      run.proxy.delay({ downstream: 1_000 });
      await expect(lock.extend(2_000)).rejects.toBeInstanceOf(LockUnavailableError);
      await waitFor(
        'the extend to land',
        async () => ((await run.observer.inspect('shorter')).ttl ?? 0) <= 2_000,
        {
          timeout: 5_000,
        },
      );
      const before = performance.now();
      const { ttl } = await run.observer.inspect('shorter');
      // The key expires at `before + ttl` at the earliest; the handle must not count on later.
      expect(lock.validUntil).toBeLessThanOrEqual(before + ttl!);
      run.proxy.pass();
    });
  },
);
