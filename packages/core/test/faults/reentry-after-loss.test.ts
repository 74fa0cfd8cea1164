import { createLocker, type Lock, LockBusyError, type Locker } from '@lock/core';
import { proxiedClient, type RedisServer, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it("takes off the outer hold's count when a re-entry is answered after our clock ended that hold", async () => {
  await using server = await startRedis();
  const admin = server.client();
  await using link = await proxiedClient(server);
  // The command timeout outlasts the delayed answer below: the re-entry is answered, late, not given up on.
  const locker = createLocker({ redis: link.redis, commandTimeout: 5_000 });
  // Long enough that Redis keeps the key 102 ms past our validity.
  const ttl = 10_000;
  let innerHolds = 0;
  const outcome = await locker
    .using('q', { ttl }, async (outer) => {
      // The re-entry reaches Redis inside the lease Redis keeps (our validity ends ttl × 1 % + 2 ms
      // earlier), and its answer comes only after our validity has ended. Sent 400 ms before our
      // validity ends, it reaches Redis in time even when a loaded host fires this timer up to
      // 500 ms late (40 ms before, a 250 ms stall of this process let the key expire first: 1 hold).
      await sleep(outer.validUntil - performance.now() - 400);
      link.proxy.delay({ upstream: 0, downstream: 1_000 });
      const inner = await locker.acquire('q', { ttl });
      link.proxy.pass();
      innerHolds = inner.holds;
      await inner.release();
    })
    .then(
      () => 'resolved',
      (error: Error) => error.name,
    );
  // Redis counted both holds when it answered: the race under test took place.
  expect(innerHolds).toBe(2);
  expect(outcome).toBe('LockLostError');
  // Both holds given up: the key is gone, not left to the re-entry's lease.
  await waitFor('the key freed', async () => (await admin.exists('{lock:q}')) === 0, { timeout: 2_000 });
  await locker.close();
});

/**
 * Runs a critical section of `b` (as `owner` when given) whose release Redis refuses (BUSY), with
 * a task started inside it that acquires `b` once the section is over; `between` runs before that
 * task does. Answers what the task's acquisition gave.
 */
async function afterFailedRelease(
  server: RedisServer,
  locker: Locker,
  owner: string | undefined,
  between: () => Promise<unknown>,
): Promise<unknown> {
  const admin = server.client();
  const busy = server.client();
  let sectionOver!: () => void;
  const over = new Promise<void>((resolve) => {
    sectionOver = resolve;
  });
  let spawned: Promise<unknown> | undefined;
  await locker.using('b', owner === undefined ? {} : { owner }, async () => {
    spawned = over.then(() => locker.acquire('b', { wait: 0 }).catch((error: unknown) => error));
    // Redis answers BUSY to everything while a script runs past busy-reply-threshold.
    await admin.config('SET', 'busy-reply-threshold', '10');
    busy.eval('while true do end', 0).catch(() => {});
    await waitFor('Redis busy', () =>
      admin.ping().then(
        () => false,
        (error: Error) => error.message.startsWith('BUSY'),
      ),
    );
  });
  await admin.call('SCRIPT', 'KILL');
  await waitFor('Redis answering again', () =>
    admin.ping().then(
      () => true,
      () => false,
    ),
  );
  await between();
  sectionOver();
  return spawned;
}

it('lets no task re-enter a hold whose last release failed, nor renew it: it ends with its lease', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const locker = createLocker({ redis: server.client(), ttl: 1_000 });
  const inner = await afterFailedRelease(server, locker, undefined, async () => {});
  expect(inner).toBeInstanceOf(LockBusyError);
  // Not renewed: the lease of 1 s ends it.
  await waitFor('the lease ended', async () => (await admin.exists('{lock:b}')) === 0, { timeout: 3_000 });
  await locker.close();
});

it('lets no task re-enter through a section that is over, even when its owner holds the key again', async () => {
  await using server = await startRedis();
  const locker = createLocker({ redis: server.client(), ttl: 1_000 });
  let again: Lock | undefined;
  const inner = await afterFailedRelease(server, locker, 'x', async () => {
    again = await locker.acquire('b', { owner: 'x' });
  });
  expect(again?.holds).toBe(2);
  expect(inner).toBeInstanceOf(LockBusyError);
  await again?.release();
  await locker.close();
});
