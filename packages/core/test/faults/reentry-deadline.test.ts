import { createLocker, LockUnavailableError } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

const COMMAND_TIMEOUT = 2_000;

it('a re-entry queued behind a renewal in flight to a frozen Redis settles one command timeout after it was called', async () => {
  await using server = await startRedis();
  const redis = server.client();
  // Renewed every third of the lease: the first renewal goes out about 3 s in, with 6 s of the lease left.
  const locker = createLocker({ redis, ttl: 9_000, commandTimeout: COMMAND_TIMEOUT });
  const renewals: number[] = [];
  // Watches the client's commands to see the renewal go out: inside the section below, only the
  // watchdog's renewals carry the lease (the acquisition that also did came before).
  const client = redis as unknown as { evalsha: (...args: unknown[]) => Promise<unknown> };
  const send = client.evalsha.bind(redis);
  client.evalsha = (...args) => {
    if (args.includes('9000') || args.includes(9_000)) renewals.push(performance.now());
    return send(...args);
  };
  await locker.using('k', async () => {
    const before = renewals.length;
    server.pause();
    await waitFor('a renewal sent to the frozen server', async () => renewals.length > before, {
      timeout: 5_000,
    });
    const called = performance.now();
    // Its turn comes only when the renewal gives up, a command timeout after it was sent.
    await expect(locker.tryAcquire('k')).rejects.toBeInstanceOf(LockUnavailableError);
    const took = performance.now() - called;
    server.resume();
    // Counted from the call, it settles by one command timeout (not the renewal's wait plus one).
    expect(took).toBeLessThan(COMMAND_TIMEOUT + 1_000);
  });
  await locker.close();
}, 20_000);
