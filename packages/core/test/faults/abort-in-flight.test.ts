import { createLocker, LockAbortError } from '@lock/core';
import { commandsInFlight, startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { mark } from '../support/settle.js';

const COMMAND_TIMEOUT = 5_000;

it('an abort while the attempt is on the wire to a frozen Redis settles at once; the grant landing later is undone', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const locker = createLocker({ redis, commandTimeout: COMMAND_TIMEOUT });
  const before = await locker.acquire('k');
  await before.release();

  const inFlight = commandsInFlight(redis);
  server.pause();
  const controller = new AbortController();
  const acquiring = locker.acquire('k', { signal: controller.signal, wait: 30_000 });
  // Due before the attempt's command timeout, armed after it was sent.
  using attemptTimeout = mark(COMMAND_TIMEOUT / 2);
  const now = () => ({ unanswered: inFlight.pending(), pastTimeout: attemptTimeout.fired() });
  const settled = acquiring.then(
    () => ({ outcome: 'acquired', ...now() }),
    (error: unknown) => ({ outcome: error, ...now() }),
  );
  // The attempt was written before acquire() returned: no reply can come while Redis is frozen.
  await new Promise((resolve) => setImmediate(resolve));
  controller.abort(new Error('the request went away'));
  const { outcome, ...when } = await settled;
  server.resume();

  expect(outcome).toBeInstanceOf(LockAbortError);
  expect((outcome as LockAbortError).cause).toEqual(new Error('the request went away'));
  // It settled with the attempt still unanswered; before, it settled only once the attempt timed
  // out (a full command timeout).
  expect(when).toEqual({ unanswered: 1, pastTimeout: false });

  // The frozen attempt ran once Redis resumed and was granted (it drew a fence); nobody uses
  // that grant, so the engine gives it back and the next caller gets the lock after it.
  const next = await locker.acquire('k', { wait: 10_000 });
  expect(next.fence).toBe(before.fence + 2);
  await next.release();
  await locker.close();
}, 30_000);

it('an abort before the attempt was sent (a first acquire checks the server first) leaves no queue place behind', async () => {
  await using server = await startRedis();
  const direct = server.client();
  const holder = createLocker({ redis: server.client() });
  const held = await holder.acquire('k', { ttl: 30_000 });
  // A new locker's first acquire checks the server's eviction policy before it sends its attempt.
  const locker = createLocker({ redis: server.client() });
  const controller = new AbortController();
  const acquiring = locker.acquire('k', { signal: controller.signal, wait: 10_000 });
  controller.abort();
  await expect(acquiring).rejects.toBeInstanceOf(LockAbortError);
  // close() waits for the attempt given up on and for the call's cleanup.
  await locker.close();
  expect(await direct.zrange('{lock:k}:queue', '0', '-1')).toEqual([]);
  expect(await direct.hlen('{lock:k}:waiters')).toBe(0);
  // Nobody is left queued to be handed the lock: the release frees it.
  await held.release();
  expect(await direct.exists('{lock:k}')).toBe(0);
  await holder.close();
});
