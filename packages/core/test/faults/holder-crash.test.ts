import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { startHolder } from './support/processes.js';

const TTL = 1_000;
const RETRY = { base: 50, max: 500, jitter: 0.5 };
/** The waiter's wait: a waiter never freed by the dead holder's expiry fails only at its end. */
const WAIT = 30_000;
/** Generous slack on a loaded 2-core machine, still far below the wait. */
const SLACK_MS = 5_000;

it('G7: a holder process killed while holding: a waiter gets the lock within ttl + one retry delay, with a higher fence', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const waiter = createLocker({ redis, retry: RETRY });
  const holder = startHolder({ url: server.url, key: 'crashed', ttl: TTL, wait: 5_000 });
  try {
    const held = JSON.parse(await holder.line((line) => line.startsWith('{'))) as {
      owner: string;
      fence: number;
    };
    // The child's watchdog renews it: it is held now, and with a lease no longer than the ttl.
    const before = await waiter.inspect('crashed');
    expect(before.owner).toBe(held.owner);
    expect(before.ttl).toBeGreaterThan(0);
    expect(before.ttl).toBeLessThanOrEqual(TTL);

    const waiting = waiter.acquire('crashed', { ttl: 10_000, wait: WAIT });
    holder.child.kill('SIGKILL');
    const killedAt = performance.now();
    const lock = await waiting;
    const tookOver = performance.now() - killedAt;

    expect(tookOver).toBeLessThanOrEqual(TTL + RETRY.max + SLACK_MS);
    expect(lock.fence).toBeGreaterThan(held.fence);
    expect((await waiter.inspect('crashed')).owner).toBe(lock.owner);
    await lock.release();
  } finally {
    holder.child.kill('SIGKILL');
    await waiter.close();
  }
}, 60_000);
