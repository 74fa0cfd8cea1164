import { createLocker, LockUnavailableError } from '@lock/core';
import { commandsInFlight, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { mark, thrown } from '../support/settle.js';

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
    const inFlight = commandsInFlight(redis);
    const before = renewals.length;
    server.pause();
    await waitFor('a renewal sent to the frozen server', async () => renewals.length > before, {
      timeout: 5_000,
    });
    // Due after the call's own command timeout, before one counted from when the renewal gave up.
    using secondTimeout = mark(1.5 * COMMAND_TIMEOUT);
    // Its turn comes only when the renewal gives up, a command timeout after it was sent.
    const error = await thrown(locker.tryAcquire('k'));
    const when = { unanswered: inFlight.pending(), pastSecondTimeout: secondTimeout.fired() };
    server.resume();
    expect(error).toBeInstanceOf(LockUnavailableError);
    // Counted from the call, it settles by one command timeout (not the renewal's wait plus one),
    // with the renewal and its own attempt sent and unanswered.
    expect(when).toEqual({ unanswered: 2, pastSecondTimeout: false });
  });
  await locker.close();
}, 20_000);
