import { fileURLToPath } from 'node:url';
import { createLocker, LockUnavailableError } from '@lock/core';
import { startMasters, startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { keysWithoutTtl } from '../contract/keys.js';
import { FENCE_COUNTERS } from '../contract/target.js';
import { runContention } from '../support/contention.js';
import { DEPLOYMENTS, type Deployment, lease } from '../support/deployments.js';
import { checkHistory } from '../support/history.js';
import { type Report, scriptCalls } from './support/short-ttl-factory.js';

const TTL = 1_000;
const PAUSE = 1_500;
/** Workers x iterations: the full run for the default protocol, a smaller one for the others to bound suite time. */
const size = (target: Deployment) =>
  target.name === 'token' ? { workers: 8, iterations: 100 } : { workers: 4, iterations: 50 };

it.each(DEPLOYMENTS)(
  'S9 ($name): CLIENT PAUSE WRITE on every master for 1.5x the ttl in the middle of the run: no overlap, exact witness, no grant during the pause',
  async (target) => {
    const { workers, iterations } = size(target);
    const sections = workers * iterations;
    await using locks = await startMasters(target.masters);
    // The witness lives on another server, so the pause stalls only the lock scripts.
    await using witness = await startRedis();
    const witnessClient = witness.client();
    const report: Report = { url: witness.url, key: 'report', workers };
    // Connected before the run: a connection made at the pause would move its start by however long
    // connecting takes on a loaded machine, and the calls made just before it be granted meanwhile.
    const pausers = locks.clients();
    await Promise.all(pausers.map((pauser) => pauser.ping()));
    const run = runContention({
      factory: fileURLToPath(new URL('./support/short-ttl-factory.ts', import.meta.url)),
      config: { urls: locks.urls, ttl: lease(target, TTL), deployment: target.name, report },
      key: 'paused',
      witnessUrl: witness.url,
      witnessKey: 'witness',
      workers,
      iterations,
    });
    let failed: unknown;
    run.catch((error: unknown) => {
      failed = error;
    });
    // Mid-run: once about a third of the sections are done (the workers begin together: see the factory).
    for (;;) {
      if (failed) throw failed;
      const done = Number((await witnessClient.get('witness')) ?? '0');
      if (done >= sections / 3) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const pauseSent = process.hrtime.bigint();
    await Promise.all(pausers.map((pauser) => pauser.call('CLIENT', 'PAUSE', PAUSE, 'WRITE')));
    const pauseAcknowledged = process.hrtime.bigint();
    const intervals = await run;

    expect(checkHistory(intervals)).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: sections });
    expect(await witnessClient.get('witness')).toBe(String(sections));
    // Each server paused somewhere between pauseSent and pauseAcknowledged and resumed no earlier
    // than pauseSent + PAUSE. A call made after the pause was acknowledged sent all its attempts
    // once the pause was on: Redis ran none of them before it ended, so none of its grants may start
    // earlier. (Grants answered before the pause are left out: a worker may record one any time
    // later on a loaded machine.)
    const resumedFrom = pauseSent + BigInt(PAUSE) * 1_000_000n;
    expect(intervals.filter((i) => i.requested === undefined)).toEqual([]);
    const madeLater = intervals.filter((i) => i.requested! > pauseAcknowledged);
    // Two thirds of the sections remain once the pause is on: many of their calls are made after it.
    expect(madeLater).not.toEqual([]);
    expect(madeLater.filter((i) => i.start < resumedFrom)).toEqual([]);
    // The pause really hit the run: no lock script sent while it was on was answered before it
    // ended, and some script was held by it: sent while it was on, or sent before and answered
    // only after it ended (a waiter's attempt or a release on the wire when it began: a call sends
    // no other attempt behind one unanswered, so a run may send none while paused).
    const calls = await scriptCalls(witnessClient, report);
    const stalled = calls.filter((call) => call.sent > pauseAcknowledged && call.sent < resumedFrom);
    expect(stalled.filter((call) => call.settled < resumedFrom)).toEqual([]);
    const heldOver = calls.filter((call) => call.sent < pauseAcknowledged && call.settled >= resumedFrom);
    expect([...stalled, ...heldOver]).not.toEqual([]);
    // Nothing a stalled script or release left behind lacks a TTL, but fence counters and their stamps.
    const untimed = (await Promise.all(pausers.map(keysWithoutTtl))).flat();
    expect(untimed.filter((key) => !FENCE_COUNTERS.test(key))).toEqual([]);
  },
  60_000,
);

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

it('S9: a grant answered past its validity is undone and reported as Redis too slow, not as a busy lock', async () => {
  await using server = await startRedis();
  const locker = createLocker({ redis: server.client(), commandTimeout: 5_000 });
  const admin = server.client();
  // Each attempt is answered only when the pause ends, 1.5 leases after it was sent.
  await admin.call('CLIENT', 'PAUSE', PAUSE, 'WRITE');
  const tried = await locker.tryAcquire('slow-try', { ttl: TTL }).catch((error: unknown) => error);
  expect(tried).toBeInstanceOf(LockUnavailableError);
  expect((tried as LockUnavailableError).cause).toEqual(
    expect.objectContaining({
      message: expect.stringMatching(/^granted \d+ ms in, past the validity of \d+ ms$/),
    }),
  );
  // Undone: the key is free, not held for a lease by an owner that never got a handle.
  expect(await locker.isLocked('slow-try')).toBe(false);

  // A wait that ends while the late grant is on its way: unavailable, not a timeout on a busy lock.
  await admin.call('CLIENT', 'PAUSE', PAUSE, 'WRITE');
  const waited = await locker.acquire('slow-wait', { ttl: TTL, wait: 200 }).catch((error: unknown) => error);
  expect(waited).toBeInstanceOf(LockUnavailableError);
  expect(await locker.isLocked('slow-wait')).toBe(false);
  await locker.close();
}, 20_000);
