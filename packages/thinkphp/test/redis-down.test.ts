import { LockUnavailableError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { Lock, parseThinkEnv } from '@lock/thinkphp';
import { expect, it, onTestFinished, vi } from 'vitest';

/**
 * The calls' deadline. The server is killed only after the locks were taken: until then it must
 * answer within it, which a loaded machine's stall (a frozen server for 500 ms) broke at 300 ms.
 */
const COMMAND_TIMEOUT = 1_000;
/**
 * What a call may take beyond its own deadline on a loaded machine. The failure guarded against
 * (ioredis retrying the command 20 times, over 10 s of its default reconnect backoff, or a hang)
 * takes longer; the deterministic evidence is the error's cause: the call's own deadline, not
 * ioredis, ended it.
 */
const SLACK = 5_000;

/** Issue 13: with the server killed, `lock()` and `unlock()` settle by their deadline with `LockUnavailableError`. */
it('lock() and unlock() settle by their deadline with LockUnavailableError once the server is killed', async () => {
  const server = await startRedis();
  onTestFinished(() => server.stop());
  const redis = server.client();
  const options = { redis, commandTimeout: COMMAND_TIMEOUT };
  const held = new Lock('down:held', options);
  const heldStrict = new Lock('down:strict', { ...options, strict: true });
  expect(await held.lock()).toBe(true);
  expect(await heldStrict.lock()).toBe(true);
  await server.kill();

  const calls: Record<string, () => Promise<unknown>> = {
    'lock()': () => new Lock('down:other', options).lock(),
    'lock() in strict mode': () => new Lock('down:other', { ...options, strict: true }).lock(),
    'unlock()': () => held.unlock(),
    'unlock() in strict mode': () => heldStrict.unlock(),
    'Lock.wrap()': () => Lock.wrap('down:wrapped', () => 'ran', options),
  };
  const outcomes: Record<string, { error: string; cause: string; inTime: boolean }> = {};
  for (const [name, call] of Object.entries(calls)) {
    const started = performance.now();
    const error = await call().then(
      () => null,
      (e: unknown) => e,
    );
    outcomes[name] = {
      error: error instanceof LockUnavailableError ? 'LockUnavailableError' : String(error),
      cause: error instanceof Error && error.cause instanceof Error ? error.cause.name : 'none',
      inTime: performance.now() - started < COMMAND_TIMEOUT + SLACK,
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
});

/**
 * The connection of `{ env }` locks is the package's: its owner cannot listen to it, and ioredis
 * prints "Unhandled error event" with a stack for each failed reconnect of a client nobody
 * listens to, every 2 s for as long as Redis is down. The error reaches the caller in the
 * rejection instead.
 */
it('an { env } connection to a Redis that is down prints no "Unhandled error event", in either mode', async () => {
  const printed = vi.spyOn(console, 'error');
  onTestFinished(() => printed.mockRestore());
  // Killed, its port stays reserved for it: connections to it are refused.
  const server = await startRedis();
  onTestFinished(() => server.stop());
  await server.kill();
  const env = parseThinkEnv(`[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\n`);
  onTestFinished(() => Lock.disconnect());
  // The default mode's error names the refused connection: the client has failed by then.
  await expect(new Lock('down:env', { env, commandTimeout: COMMAND_TIMEOUT }).lock()).rejects.toThrow(
    /last connection error: connect ECONNREFUSED/,
  );
  await expect(
    new Lock('down:env', { env, commandTimeout: COMMAND_TIMEOUT, strict: true }).lock(),
  ).rejects.toBeInstanceOf(LockUnavailableError);
  const unhandled = printed.mock.calls.filter(([first]) => String(first).includes('Unhandled error event'));
  expect(unhandled).toEqual([]);
});

/**
 * One env connection has a locker per distinct clock and timeout settings, and against a frozen
 * server each one's close waits for the lock it still holds, up to its command timeout. Closed
 * one after another, ten took 10 s here; side by side, one close and the QUIT's 500 ms, as the
 * README says.
 */
it("Lock.disconnect() against a frozen server closes one connection's lockers side by side, within about one commandTimeout", async () => {
  const server = await startRedis();
  onTestFinished(() => server.stop());
  const env = parseThinkEnv(`[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\n`);
  for (let i = 0; i < 10; i++) {
    const lock = new Lock(`frozen:disconnect:${i}`, {
      env,
      commandTimeout: COMMAND_TIMEOUT,
      // Held past every close: a hold whose lease ran out meanwhile has nothing left to release.
      expire: 60,
      peerClockAhead: i * 100,
    });
    expect(await lock.lock()).toBe(true);
  }
  server.pause();
  onTestFinished(() => server.resume());
  const started = performance.now();
  await Lock.disconnect();
  expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT + 500 + SLACK);
});
