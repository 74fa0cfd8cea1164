import { proxiedClient, startRedis, type TcpProxy, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson } from '../src/index.js';

/**
 * The head of a fair queue whose own connection fails for a while just as the lock comes to it:
 * partitioned (its requests held, then delivered), dropped (its requests lost, then resent by
 * ioredis), or reset before each reply (every attempt lands, every answer is lost, until the
 * connection heals). It is served before the waiter queued behind it, however its attempts and
 * their late grants given back (its owner is a thread: each is undone at once) interleave.
 */
describe('a fair-lock waiter whose connection fails briefly keeps its turn', () => {
  let stop: () => Promise<void>;
  let proxy: TcpProxy;
  let direct: Redis;
  let cut: Redisson;
  let fast: Redisson;

  beforeAll(async () => {
    const server = await startRedis();
    const proxied = await proxiedClient(server);
    proxy = proxied.proxy;
    direct = server.client();
    cut = createRedisson({ redis: proxied.redis, commandTimeout: 500 });
    fast = createRedisson({ redis: server.client() });
    stop = async () => {
      await cut.shutdown();
      await fast.shutdown();
      await proxied.close();
      await server.stop();
    };
  });
  afterAll(() => stop());

  const faults: [fault: string, start: () => void][] = [
    ['partitioned', () => proxy.blackhole()],
    ['dropped', () => proxy.drop()],
    ['reset before every reply', () => proxy.resetAfter(0, 'downstream')],
  ];

  it.each(faults)(
    '%s for 2 s',
    async (fault, start) => {
      const name = `outage:${fault}`;
      const queue = `redisson_lock_queue:{${name}}`;
      const served: string[] = [];
      const take = (redisson: Redisson, who: string) =>
        redisson.run(async () => {
          await redisson.getFairLock(name).lock();
          served.push(who);
          await redisson.getFairLock(name).unlock();
        });
      const holder = fast.getFairLock(name);
      await holder.lock({ threadId: 1 });
      const head = take(cut, 'head');
      await waitFor('the head queued', async () => (await direct.llen(queue)) === 1);
      const behind = take(fast, 'behind');
      await waitFor('the waiter behind queued', async () => (await direct.llen(queue)) === 2);

      start();
      await holder.unlock({ threadId: 1 });
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      proxy.pass();
      await Promise.all([head, behind]);
      expect(served).toEqual(['head', 'behind']);
    },
    30_000,
  );
});
