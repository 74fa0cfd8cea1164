import { fileURLToPath } from 'node:url';
import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { runContention } from '../support/contention.js';
import { checkHistory } from '../support/history.js';

const TTL = 1_000;
const PAUSE = 1_500;

it('S9: CLIENT PAUSE WRITE for 1.5x the ttl in the middle of 8x100: no overlap, exact witness, no grant during the pause', async () => {
  await using locks = await startRedis();
  // The witness lives on another server, so the pause stalls only the lock scripts.
  await using witness = await startRedis();
  const witnessClient = witness.client();
  const run = runContention({
    factory: fileURLToPath(new URL('./support/short-ttl-factory.ts', import.meta.url)),
    config: { url: locks.url, ttl: TTL },
    key: 'paused',
    witnessUrl: witness.url,
    witnessKey: 'witness',
    workers: 8,
    iterations: 100,
  });
  let failed: unknown;
  run.catch((error: unknown) => {
    failed = error;
  });
  // Mid-run: once about a third of the 800 critical sections are done.
  for (;;) {
    if (failed) throw failed;
    const done = Number((await witnessClient.get('witness')) ?? '0');
    if (done >= 250) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const pauseSent = process.hrtime.bigint();
  await locks.client().call('CLIENT', 'PAUSE', PAUSE, 'WRITE');
  const pauseAcknowledged = process.hrtime.bigint();
  const intervals = await run;

  expect(checkHistory(intervals)).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: 800 });
  expect(await witnessClient.get('witness')).toBe('800');
  // The server paused somewhere between pauseSent and pauseAcknowledged and resumed no
  // earlier than pauseSent + PAUSE. A grant answered just before the pause may still be
  // recorded by its worker shortly after it; 200 ms covers that scheduling delay.
  const quietFrom = pauseAcknowledged + 200_000_000n;
  const quietUntil = pauseSent + BigInt(PAUSE) * 1_000_000n;
  const grantedDuringPause = intervals.filter((i) => i.start > quietFrom && i.start < quietUntil);
  expect(grantedDuringPause).toEqual([]);
  // The pause really hit the run: the history has a stall of (almost) its whole length.
  const startsMs = intervals.map((i) => Number(i.start / 1_000_000n)).sort((a, b) => a - b);
  const longestGap = Math.max(...startsMs.slice(1).map((start, i) => start - startsMs[i]!));
  expect(longestGap).toBeGreaterThanOrEqual(PAUSE - 300);
}, 60_000);

it('S9: an acquisition whose reply comes back after its validity ended is not handed out as held', async () => {
  await using server = await startRedis();
  // A command timeout longer than the pause: the first attempt is answered, late, with a grant
  // (fence 1) whose lease has already run out by the time the reply arrives.
  const locker = createLocker({ redis: server.client(), commandTimeout: 5_000 });
  const admin = server.client();
  // The acquire script is sent at once but runs only when the pause ends, 1.5 leases later.
  await admin.call('CLIENT', 'PAUSE', PAUSE, 'WRITE');
  const lock = await locker.acquire('stale-grant', { ttl: TTL, wait: 5_000 });
  const returnedAt = performance.now();
  // The late grant was undone and the next attempt took the lock afresh, with the next fence.
  expect(lock.fence).toBe(2);
  // The handle the caller got is valid when it gets it.
  expect(lock.validUntil).toBeGreaterThan(returnedAt);
  expect(await locker.isLocked('stale-grant')).toBe(true);
  await lock.release();
  // No orphan: nothing stays held by an owner that does not believe it holds.
  expect(await locker.isLocked('stale-grant')).toBe(false);
  await locker.close();
}, 20_000);
