import { LockUnavailableError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it, onTestFinished } from 'vitest';
import { createRedisson } from '../src/index.js';

const COMMAND_TIMEOUT = 300;
/**
 * What a call may take beyond its own deadline on a loaded machine. The failure guarded against
 * (ioredis retrying the command 20 times, or a hang) takes tens of seconds; the deterministic
 * evidence is the error's cause: the call's own deadline, not ioredis, ended it.
 */
const SLACK = 5_000;

/** Issue 13: with the server killed, every entry point settles by its deadline with `LockUnavailableError`. */
it('every call settles by its deadline with LockUnavailableError once the server is killed', async () => {
  const server = await startRedis();
  onTestFinished(() => server.stop());
  const redisson = createRedisson({ redis: server.client(), commandTimeout: COMMAND_TIMEOUT });
  const lock = redisson.getLock('down');
  const fenced = redisson.getFencedLock('down:fenced');
  const rw = redisson.getReadWriteLock('down:rw');
  await lock.lock({ threadId: 1 });
  await server.kill();

  const calls: Record<string, [deadline: number, call: () => Promise<unknown>]> = {
    'tryLock()': [COMMAND_TIMEOUT, () => lock.tryLock({ threadId: 2 })],
    'tryLock({ wait })': [500 + COMMAND_TIMEOUT, () => lock.tryLock({ threadId: 2, wait: 500 })],
    'tryLockAndGetToken()': [COMMAND_TIMEOUT, () => fenced.tryLockAndGetToken({ threadId: 2 })],
    'readLock().tryLock()': [COMMAND_TIMEOUT, () => rw.readLock().tryLock({ threadId: 2 })],
    'unlock() of a hold': [COMMAND_TIMEOUT, () => lock.unlock({ threadId: 1 })],
    'forceUnlock()': [COMMAND_TIMEOUT, () => lock.forceUnlock()],
    'isLocked()': [COMMAND_TIMEOUT, () => lock.isLocked()],
    'isHeldByThread()': [COMMAND_TIMEOUT, () => lock.isHeldByThread(1)],
    'getHoldCount()': [COMMAND_TIMEOUT, () => lock.getHoldCount({ threadId: 1 })],
    'remainTimeToLive()': [COMMAND_TIMEOUT, () => lock.remainTimeToLive()],
    'getToken()': [COMMAND_TIMEOUT, () => fenced.getToken()],
  };
  const outcomes: Record<string, { error: string; cause: string; inTime: boolean }> = {};
  for (const [name, [deadline, call]] of Object.entries(calls)) {
    const started = performance.now();
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    outcomes[name] = {
      error: error instanceof LockUnavailableError ? 'LockUnavailableError' : String(error),
      cause: error instanceof Error && error.cause instanceof Error ? error.cause.name : 'none',
      inTime: performance.now() - started < deadline + SLACK,
    };
  }
  expect(outcomes).toEqual(
    Object.fromEntries(
      Object.keys(calls).map((name) => [
        name,
        { error: 'LockUnavailableError', cause: 'CommandTimeoutError', inTime: true },
      ]),
    ),
  );

  const closing = performance.now();
  await redisson.shutdown();
  expect(performance.now() - closing).toBeLessThan(COMMAND_TIMEOUT + SLACK);
});
