import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { createRedisson } from '../src/index.js';

/**
 * On a client that drops what a reset left unanswered (`autoResendUnfulfilledCommands: false`),
 * the engine undoes a re-entry whose reply never came, by its attempt and without a token: the
 * grant's lease is unknown. The holds left keep their TTL, as an unlock of them would: the
 * undo must not re-apply the watchdog's 30 s to a lock taken with a lease of 5 s.
 */
it('an undone re-entry whose reply was dropped leaves the holds left their own lease', async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server, { redis: { autoResendUnfulfilledCommands: false } });
  const redisson = createRedisson({ redis: proxied.redis });
  const direct = server.client();
  try {
    const lock = redisson.getLock('leased');
    await lock.lock({ threadId: 1, lease: 5_000 });
    const owner = `${redisson.id}:1`;
    // The re-entry runs on the server, its reply is reset: the call fails, and its count is undone.
    proxied.proxy.resetAfter(0, 'downstream', 1);
    await expect(lock.tryLock({ threadId: 1, lease: 5_000 })).rejects.toThrow();
    expect(proxied.proxy.resets).toBe(1);
    await waitFor('the dropped re-entry undone', async () => (await direct.hget('leased', owner)) === '1');
    expect(await direct.pttl('leased')).toBeLessThanOrEqual(5_000);
    await lock.unlock({ threadId: 1 });
    expect(await direct.exists('leased')).toBe(0);
  } finally {
    await redisson.shutdown();
  }
}, 20_000);
