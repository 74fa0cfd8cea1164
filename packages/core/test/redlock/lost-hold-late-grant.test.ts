import { createRedlock, type Lock, LockLostError } from '@lock/core';
import { proxiedClient, startMasters, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

/**
 * A fresh owner's hold lost by our clock while Redis still counts it is released by its owner's
 * name, which takes its count off every master. Its acquisition's grant that master 1 answered
 * only after the loss must not take that count off a second time: a re-entry granted since under
 * the same name (a hold of its own, the outer one being lost) counts on master 1, and with
 * master 2 cut off it holds a bare majority (masters 0 and 1). Two counts taken off master 1
 * would leave it on master 0 alone, and another client would take the lock from under it.
 */
it("keeps a re-entry's count where a lost hold's late grant and its release by name both land", async () => {
  await using masters = await startMasters(3);
  const direct = masters.clients();
  await using one = await proxiedClient(masters.servers[1]!);
  await using two = await proxiedClient(masters.servers[2]!);
  let skew = 0;
  const locker = createRedlock({
    clients: [direct[0]!, one.redis, two.redis],
    nodeTimeout: 1_000,
    clock: () => performance.now() + skew,
  });
  const other = createRedlock({ clients: direct, nodeTimeout: 1_000 });
  await (await locker.acquire('warm-up', { ttl: 5_000 })).release();
  // Master 1 applies at once but answers 1.5 s late: past the node timeout for the outer attempt.
  one.proxy.delay({ upstream: 0, downstream: 1_500 });
  let inner: Lock | undefined;
  const outcome = locker.using('k', { ttl: 3_000, renew: false }, async (outer) => {
    // Master 2 cut off: the re-entry is granted by masters 0 and 1 alone.
    two.proxy.blackhole();
    const reentering = locker.acquire('k', { ttl: 30_000, renew: false, wait: 0 });
    // While it is on the wire our clock jumps past the outer validity (a stalled process): the
    // outer hold is lost, Redis still counts it.
    skew += 10_000;
    expect(outer.remaining()).toBe(0);
    const holdsOn1 = async () => Number(await direct[1]!.hget('{lock:k}', outer.owner));
    await waitFor('the re-entry applied on master 1', async () => (await holdsOn1()) === 2, { interval: 5 });
    // Master 1's answers arrive now: the outer attempt's grant (late), then the re-entry's (in time).
    one.proxy.pass();
    inner = await reentering;
    expect(inner.holds).toBe(2);
  });
  await expect(outcome).rejects.toBeInstanceOf(LockLostError);
  // The outer hold's release by name has run on master 0.
  await waitFor(
    'the lost hold released by name',
    async () => Number(await direct[0]!.hget('{lock:k}', inner!.owner)) === 1,
  );
  await one.redis.ping();
  // The outer hold's count on master 2 ends with its ttl; the re-entry's lease runs 30 s.
  await waitFor(
    'the outer key on master 2 expired',
    async () => (await direct[2]!.exists('{lock:k}')) === 0,
    {
      timeout: 8_000,
    },
  );
  expect(inner!.remaining()).toBeGreaterThan(0);
  const taken = await other.tryAcquire('k', { ttl: 1_000 });
  await taken?.release();
  expect(taken === null, 'another client took the lock from under the re-entry').toBe(true);
  await inner!.release();
  await Promise.all([locker.close(), other.close()]);
}, 30_000);
