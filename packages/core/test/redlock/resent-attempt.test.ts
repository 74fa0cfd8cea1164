import { createRedlock, type Lock, QuorumError } from '@lock/core';
import { commandsInFlight, proxiedClient, startMasters, type TcpProxy, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';

/**
 * An attempt that landed on every master but whose replies were cut is undone; with the
 * connections flapping, ioredis drops that undo (its offline queue is flushed once
 * `maxRetriesPerRequest` runs out) but still resends the attempt once a connection holds. The
 * grant the resent attempt answers, late, must be undone too: otherwise the key stays held by
 * an owner nobody has, for the whole ttl.
 */
it('undoes the late grant of an attempt resent after its undo was dropped', async () => {
  await using masters = await startMasters(3);
  const proxied = await Promise.all(
    masters.servers.map((server) =>
      proxiedClient(server, { redis: { maxRetriesPerRequest: 2, retryStrategy: () => 50 } }),
    ),
  );
  const direct = masters.clients();
  try {
    const locker = createRedlock({ clients: proxied.map((each) => each.redis), nodeTimeout: 100 });
    // Scripts loaded and the masters checked, so the attempt below is sent at once.
    await (await locker.acquire('warm-up', { ttl: 1_000 })).release();

    for (const { proxy } of proxied) proxy.resetAfter(0, 'downstream');
    await expect(locker.tryAcquire('k', { ttl: 10_000 })).rejects.toBeInstanceOf(QuorumError);
    expect(await lockKeys(direct)).toEqual([1, 1, 1]);
    // The undo was queued behind the cut connections: dropped, while the attempt is kept to resend.
    await Promise.all(proxied.map(({ redis }) => queueFlushed(redis)));
    expect(await lockKeys(direct)).toEqual([1, 1, 1]);

    for (const { proxy } of proxied) proxy.pass();
    // Well within the 10 s the keys would otherwise keep.
    await waitFor(
      'the resent grants undone',
      async () => (await lockKeys(direct)).every((key) => key === 0),
      { timeout: 5_000 },
    );
    // Only the keys are under test here: this locker's first call (its master checks included)
    // gets time for a loaded host's round trips, which 100 ms, right for the cut locker, is not.
    const other = createRedlock({ clients: direct, nodeTimeout: 1_000 });
    const next = await other.tryAcquire('k', { ttl: 1_000 });
    expect(next).not.toBeNull();
    await next?.release();
    await Promise.all([locker.close(), other.close()]);
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
}, 30_000);

/**
 * The late grant of a fresh owner's failed attempt may come back after the same call's next
 * attempt was sent to that master, which then holds the key for the call: undone then, it would
 * take the key from under the handle the call returns. Y is cut from master 0 and, for its first
 * attempt, from master 2; that attempt's answer from master 2 comes once Y's next attempt won.
 */
it("keeps the key a later attempt of the same call holds when an earlier attempt's grant comes back late", async () => {
  await using masters = await startMasters(3);
  const direct = masters.clients();
  await using first = await proxiedClient(masters.servers[0]!);
  await using third = await proxiedClient(masters.servers[2]!);
  const y = createRedlock({ clients: [first.redis, direct[1]!, third.redis], nodeTimeout: 600 });
  const x = createRedlock({ clients: [direct[1]!], nodeTimeout: 600 });
  await (await y.acquire('warm-up', { ttl: 1_000 })).release();
  const held = await x.acquire('k', { ttl: 20_000 });
  const xFields = await direct[1]!.hkeys('{lock:k}');
  const unanswered = [first.redis, third.redis].map(commandsInFlight);

  first.proxy.blackhole();
  third.proxy.blackhole();
  const acquiring = y.acquire('k', { ttl: 20_000, wait: 10_000 });
  // Y's first attempt fails (refused by master 1, no answer from the others): its undo is sent
  // after it to masters 0 and 2, and both stay unanswered there.
  await waitFor(
    "Y's first attempt and its undo unanswered on masters 0 and 2",
    async () => unanswered.every((commands) => commands.pending() >= 2),
    { timeout: 5_000, interval: 5 },
  );
  expect(await direct[1]!.hkeys('{lock:k}')).toEqual(xFields);
  await held.release();
  await waitFor(
    "Y's next attempt on master 1",
    async () => (await direct[1]!.hkeys('{lock:k}')).some((field) => !xFields.includes(field)),
    { timeout: 8_000, interval: 5 },
  );
  third.proxy.pass();
  const lock = await acquiring;
  // Master 2 answered Y's first attempt late (a grant: the undo had deleted the key, the next
  // attempt made it again): that key is the lock Y holds now.
  await waitFor(
    'the first attempt answered on master 2',
    async () => (await direct[2]!.exists('{lock:k}')) === 1,
  );
  const z = createRedlock({ clients: direct, nodeTimeout: 600 });
  expect(await z.tryAcquire('k', { ttl: 5_000 })).toBeNull();
  expect(lock.signal.aborted).toBe(false);
  first.proxy.pass();
  await lock.release();
  await Promise.all([x.close(), y.close(), z.close()]);
}, 40_000);

it('undoes a late grant of a fresh owner whose hold has ended, where the release did not reach', async () => {
  await using masters = await startMasters(3);
  const direct = masters.clients();
  const flaky = { redis: { maxRetriesPerRequest: 2, retryStrategy: () => 50 } };
  await using one = await proxiedClient(masters.servers[1]!, flaky);
  await using two = await proxiedClient(masters.servers[2]!, flaky);
  const locker = createRedlock({ clients: [direct[0]!, one.redis, two.redis], nodeTimeout: 100 });
  await (await locker.acquire('warm-up', { ttl: 1_000 })).release();
  one.proxy.resetAfter(0, 'downstream');
  two.proxy.resetAfter(0, 'downstream');
  const acquiring = locker.acquire('k', { ttl: 10_000, wait: 8_000 });
  // The first attempts land everywhere, unanswered; their undos are dropped on masters 1 and 2,
  // and run on master 0: the key is left on masters 1 and 2 only (between two retries of the call).
  await Promise.all([one.redis, two.redis].map(queueFlushed));
  await waitFor('the key left on masters 1 and 2 only', async () => `${await lockKeys(direct)}` === '0,1,1', {
    timeout: 5_000,
    interval: 5,
  });
  one.proxy.pass();
  const lock = await acquiring;
  // Released on masters 0 and 1; the release to master 2, still cut, is dropped too.
  await releasedThenAnswered(lock, direct, two);
  await locker.close();
}, 40_000);

it('undoes a late minority grant of an attempt that was handed out, once its hold has ended', async () => {
  await using masters = await startMasters(3);
  const direct = masters.clients();
  await using two = await proxiedClient(masters.servers[2]!, {
    redis: { maxRetriesPerRequest: 2, retryStrategy: () => 50 },
  });
  const locker = createRedlock({ clients: [direct[0]!, direct[1]!, two.redis], nodeTimeout: 100 });
  await (await locker.acquire('warm-up', { ttl: 1_000 })).release();
  two.proxy.resetAfter(0, 'downstream');
  // Granted by masters 0 and 1; master 2's grant lands unanswered, and its release is dropped.
  const lock = await locker.acquire('k', { ttl: 10_000, wait: 8_000 });
  await releasedThenAnswered(lock, direct, two);
  await locker.close();
}, 40_000);

/**
 * Releases `lock`, whose release reaches masters 0 and 1 only (master 2's connection is cut and
 * its client drops the release), then lets master 2 answer the attempt it was resent: a grant of
 * an owner whose hold has ended, which must be undone there.
 */
async function releasedThenAnswered(
  lock: Lock,
  direct: readonly Redis[],
  master2: { redis: Redis; proxy: TcpProxy },
): Promise<void> {
  expect(await lock.release()).toBe('released');
  expect(await lockKeys(direct)).toEqual([0, 0, 1]);
  await queueFlushed(master2.redis);
  master2.proxy.pass();
  await waitFor('the key on master 2 undone', async () => (await direct[2]!.exists('{lock:k}')) === 0, {
    timeout: 5_000,
  });
}

/** Whether each master has the key `k`: 1 or 0, in the masters' order. */
function lockKeys(direct: readonly Redis[]): Promise<number[]> {
  return Promise.all(direct.map((redis) => redis.exists('{lock:k}')));
}

/**
 * Resolves once `redis`, whose connection keeps being cut, has dropped what its offline queue
 * held when called: ioredis flushes that queue each time a command outlives
 * `maxRetriesPerRequest` (2 here) reconnections, so four more reconnections pass a flush.
 * Commands already written (an attempt) it keeps, to resend once a connection holds.
 */
async function queueFlushed(redis: Redis): Promise<void> {
  let reconnections = 0;
  const count = () => reconnections++;
  redis.on('reconnecting', count);
  try {
    await waitFor('the offline queue flushed', async () => reconnections >= 4, {
      timeout: 10_000,
      interval: 10,
    });
  } finally {
    redis.off('reconnecting', count);
  }
}
