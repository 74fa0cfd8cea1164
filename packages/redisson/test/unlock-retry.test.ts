import { LockUnavailableError } from '@lock/core';
import { proxiedClient, startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { createRedisson } from '../src/index.js';

/**
 * An unlock of a lock held twice lands on Redis, but its answer comes back late (past the
 * command timeout: the caller retries, as `LockUnavailableError` invites) or not at all (the
 * connection resets and ioredis resends it). Redisson's latch answers the second sending of one
 * request id: one hold comes off, not two, which would free the lock under the thread that holds it.
 */
describe('unlock of a re-entered RLock answered late or lost', () => {
  async function setup(commandTimeout: number) {
    const server = await startRedis();
    const { proxy, redis, close } = await proxiedClient(server);
    const direct = server.client();
    const redisson = createRedisson({ redis, commandTimeout });
    const other = createRedisson({ redis: server.client() });
    const lock = redisson.getLock('orders:42');
    // The unlock script is loaded first: a NOSCRIPT answer would be late too, and nothing would land.
    await redisson.run(async () => {
      await redisson.getLock('warm').lock();
      await redisson.getLock('warm').unlock();
    });
    return {
      proxy,
      redisson,
      lock,
      holds: async () => Object.values(await direct.hgetall('orders:42')),
      otherGets: () => other.run(() => other.getLock('orders:42').tryLock()),
      async [Symbol.asyncDispose]() {
        await redisson.shutdown();
        await other.shutdown();
        await close();
        await server.stop();
      },
    };
  }

  it('a retried unlock() takes off no second hold', async () => {
    await using run = await setup(300);
    await run.redisson.run(async () => {
      await run.lock.lock();
      await run.lock.lock();
      run.proxy.delay({ downstream: 1_000 });
      await expect(run.lock.unlock()).rejects.toBeInstanceOf(LockUnavailableError);
      expect(await run.holds()).toEqual(['1']);
      run.proxy.pass();
      await run.lock.unlock();
      expect(await run.holds()).toEqual(['1']);
      expect(await run.otherGets()).toBe(false);
      expect(await run.lock.getHoldCount()).toBe(1);
      await run.lock.unlock();
      expect(await run.holds()).toEqual([]);
    });
  });

  it('an unlock resent by ioredis after a connection reset takes off no second hold', async () => {
    await using run = await setup(5_000);
    await run.redisson.run(async () => {
      await run.lock.lock();
      await run.lock.lock();
      run.proxy.resetAfter(0, 'downstream', 1);
      await run.lock.unlock();
      expect(run.proxy.resets).toBe(1);
      expect(await run.holds()).toEqual(['1']);
      expect(await run.otherGets()).toBe(false);
      await run.lock.unlock();
    });
  });
});
