import { type RedisMasters, startMasters, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { LockUnavailableError, QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import type { Locker } from '../../src/types.js';
import { timed } from '../support/settle.js';
import { ownersOn } from './support.js';

// Issue 13 for RedLock: with a majority of masters frozen (SIGSTOP), killed while connected, or
// refusing connections from the start, every call settles by its own deadline plus the bound
// RedLock states (3 × nodeTimeout + 50 ms for one call), with a LockUnavailableError (QuorumError);
// the library's own connections raise no unhandled 'error' event; nothing is left held by
// nobody; and it works again once the masters are back. The users' clients keep ioredis's defaults.
const nodeTimeout = 100;
const callBound = 3 * nodeTimeout + 50;
/** Room for a loaded 2-core machine on top of the stated bound: still far below ioredis's own retries (~1 min). */
const slack = 5_000;

let consoleErrors: MockInstance<typeof console.error>;
const rejections: unknown[] = [];
const onRejection = (reason: unknown) => rejections.push(reason);
beforeEach(() => {
  consoleErrors = vi.spyOn(console, 'error');
  rejections.length = 0;
  process.on('unhandledRejection', onRejection);
});
afterEach(() => {
  consoleErrors.mockRestore();
  process.off('unhandledRejection', onRejection);
});

function expectUnavailable(result: { error: unknown; ms: number }, deadline = 0): void {
  expect(result.error).toBeInstanceOf(QuorumError);
  expect(result.error).toBeInstanceOf(LockUnavailableError);
  // Both broken masters were cut by the node timeout, not answered or given up on by ioredis.
  expect(result.error).toMatchObject({ agreed: 1, timedOut: 2 });
  expect(result.ms).toBeGreaterThanOrEqual(deadline);
  expect(result.ms).toBeLessThan(deadline + callBound + slack);
}

function expectNoUnhandled(): void {
  const unhandled = consoleErrors.mock.calls.filter((args: unknown[]) =>
    String(args[0]).includes('Unhandled error event'),
  );
  expect(unhandled).toEqual([]);
  expect(rejections).toEqual([]);
}

type Fault = 'frozen' | 'killed';

async function breakMajority(masters: RedisMasters, fault: Fault): Promise<void> {
  for (const server of masters.servers.slice(1)) {
    if (fault === 'frozen') server.pause();
    else await server.kill();
  }
}

async function repair(masters: RedisMasters, fault: Fault): Promise<void> {
  for (const server of masters.servers.slice(1)) {
    if (fault === 'frozen') server.resume();
    else await server.restart();
  }
}

describe.each<Fault>(['frozen', 'killed'])('RedLock with 2 of 3 masters %s', (fault) => {
  it('settles every call by its deadline, leaves nothing behind and recovers', async () => {
    await using masters = await startMasters(3);
    const clients = masters.clients();
    const locker = createRedlock({ clients, nodeTimeout });
    const other = createRedlock({ clients, nodeTimeout });
    const held = await locker.acquire('held', { ttl: 30_000 });
    // A waiter subscribed on every master when they fail: its subscriber connections see the fault too.
    const waiting = timed(() => other.acquire('held', { ttl: 5_000, wait: 1_500 }));
    const waitStarted = performance.now();
    await breakMajority(masters, fault);

    expectUnavailable(await timed(() => locker.tryAcquire('free', { ttl: 5_000 })));
    expectUnavailable(await timed(() => locker.acquire('free', { ttl: 5_000, wait: 500 })), 500);
    expectUnavailable(await timed(() => held.extend()));
    expectUnavailable(await timed(() => locker.inspect('held')));
    expectUnavailable(await timed(() => locker.isLocked('held')));
    expectUnavailable(await timed(() => held.release()));
    const waited = await waiting;
    expect(waited.error).toBeInstanceOf(LockUnavailableError);
    expect(performance.now() - waitStarted).toBeLessThan(1_500 + callBound + slack);
    const closing = await timed(() => Promise.all([locker.close(), other.close()]));
    expect(closing.error).toBeUndefined();
    expect(closing.ms).toBeLessThan(callBound + slack);

    await repair(masters, fault);
    // What the frozen masters queued runs in order once they thaw (each attempt's undo after
    // it); killed ones restart empty. Either way no key is left that nobody holds.
    await Promise.all(clients.map((client) => client.ping()));
    expect(await ownersOn(clients, 'lock:free')).toEqual([null, null, null]);
    const held2 = await ownersOn(clients, 'lock:held');
    expect(held2.filter((owner) => owner !== null && owner !== held.owner)).toEqual([]);

    const after = createRedlock({ clients, nodeTimeout });
    const again = await after.acquire('free', { ttl: 5_000, wait: 5_000 });
    expect(await after.isLocked('free')).toBe(true);
    expect(await again.release()).toBe('released');
    await after.close();
    expectNoUnhandled();
  });
});

describe('RedLock with 2 of 3 masters refusing connections from the start', () => {
  it('settles every call by its deadline with QuorumError, and close() promptly', async () => {
    await using live = await startRedis();
    const dead = await Promise.all([startRedis(), startRedis()]);
    const urls = dead.map((server) => server.url);
    await Promise.all(dead.map((server) => server.stop()));
    const clients = [live.client(), ...urls.map((url) => new Redis(url))];
    for (const client of clients) client.on('error', () => {});
    const locker: Locker = createRedlock({ clients, nodeTimeout });
    try {
      expectUnavailable(await timed(() => locker.tryAcquire('k', { ttl: 5_000 })));
      expectUnavailable(await timed(() => locker.acquire('k', { ttl: 5_000, wait: 500 })), 500);
      expectUnavailable(await timed(() => locker.inspect('k')));
      const closing = await timed(() => locker.close());
      expect(closing.ms).toBeLessThan(callBound + slack);
      expect(await ownersOn(clients.slice(0, 1), 'lock:k')).toEqual([null]);
      expectNoUnhandled();
    } finally {
      for (const client of clients.slice(1)) client.disconnect();
    }
  });
});
