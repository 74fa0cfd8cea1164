import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

const RETRY = { base: 50, max: 400, jitter: 0.5 };
/** Scheduling slack on a loaded 2-core machine, on top of the longest backoff delay. */
const SLACK_MS = 300;

/**
 * The most attempts a waiter that is never woken can send in `waited` ms: the first attempt,
 * the one right after subscribing, then one per backoff delay, each at least (1 - jitter) of
 * its ceiling. Release messages each add at most one.
 */
function pollingBound(waited: number, wakeUps: number): number {
  let attempts = 2 + wakeUps;
  let elapsed = 0;
  for (let n = 0; elapsed <= waited; n++) {
    elapsed += Math.min(RETRY.max, RETRY.base * 2 ** n) * (1 - RETRY.jitter);
    attempts += 1;
  }
  return attempts;
}

it('S30: waiters whose subscriber connection was killed still get the lock by polling, without a busy loop', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const holder = createLocker({ redis: server.client() });
  const waiters = createLocker({ redis: server.client(), retry: RETRY });
  const acquisitions: { waited: number; attempts: number; at: number }[] = [];
  const onAcquire = (message: unknown) => {
    const { key, waited, attempts } = message as { key: string; waited: number; attempts: number };
    if (key === 'quiet') acquisitions.push({ waited, attempts, at: performance.now() });
  };
  try {
    const held = await holder.acquire('quiet', { ttl: 3_000 });
    subscribe('lock:acquire', onAcquire);
    const done = Array.from({ length: 3 }, () =>
      waiters.using('quiet', { wait: 10_000 }, async (lock) => lock.fence),
    );
    while ((await admin.pubsub('NUMSUB', '{lock:quiet}:released'))[1] !== 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Let the waiters' backoff grow to retry.max: the case where a lost message costs most.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Kill the waiters' subscriber, then release at once: ioredis reconnects only after a
    // delay, so the release message goes to nobody.
    expect(await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')).toBe(1);
    await held.release();
    const releasedAt = performance.now();
    expect((await admin.pubsub('NUMSUB', '{lock:quiet}:released'))[1]).toBe(0);

    const fences = await Promise.all(done);
    expect(new Set(fences).size).toBe(3);
    expect(fences.every((fence) => fence > held.fence)).toBe(true);
    const first = acquisitions.filter((a) => a.at >= releasedAt).sort((a, b) => a.at - b.at)[0]!;
    // The holder's key was deleted, not expired: only polling can find it free, within one
    // backoff delay (at most retry.max).
    expect(first.at - releasedAt).toBeLessThanOrEqual(RETRY.max + SLACK_MS);
    expect(acquisitions).toHaveLength(3);
    for (const { waited, attempts } of acquisitions) {
      // Each later waiter may be woken once per release before its turn.
      expect(attempts).toBeLessThanOrEqual(pollingBound(waited, 2));
    }
  } finally {
    unsubscribe('lock:acquire', onAcquire);
    await holder.close();
    await waiters.close();
  }
});
