import {
  createLocker,
  type LockProtocol,
  LockUnavailableError,
  legacyProtocol,
  tokenProtocol,
} from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';

/**
 * A client made with `autoResendUnfulfilledCommands: false` drops the commands a reset left
 * unanswered and never settles them. When the dropped one is the attempt that granted the lock
 * to an explicit owner, the call's next attempt finds that owner holding the key: counted as a
 * re-entry, Redis would keep a second hold the caller never got a handle for, and the key would
 * outlive the handle's release for the whole lease, locking every other client out.
 */

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Format = 'token' | 'legacy';

/**
 * A locker on such a client, warmed (the server checked and the scripts loaded: its next command
 * is an acquire script), and `other`, on a client of its own, to look at the key.
 */
async function droppingLocker(name: Format, protocol: LockProtocol | Format = name, commandTimeout?: number) {
  const server = await startRedis();
  const proxied = await proxiedClient(server, { redis: { autoResendUnfulfilledCommands: false } });
  const locker = createLocker({ redis: proxied.redis, protocol, replication: false, commandTimeout });
  const other = createLocker({ redis: server.client(), protocol: name, replication: false });
  await (await locker.acquire('warm')).release();
  return {
    proxy: proxied.proxy,
    redis: proxied.redis,
    locker,
    other,
    async [Symbol.asyncDispose]() {
      await locker.close();
      await other.close();
      await proxied.close();
      await server.stop();
    },
  };
}

describe.each(['token', 'legacy'] as const)('%s format', (name) => {
  it("an explicit owner's grant whose reply a reset dropped is counted once", async () => {
    await using t = await droppingLocker(name);
    // It runs on the server (the key is free: a grant), and its reply is reset.
    t.proxy.resetAfter(0, 'downstream', 1);
    const lock = await t.locker.acquire('k', { owner: 'worker-1', wait: 5_000 });
    expect(t.proxy.resets).toBe(1);
    await lock.release();
    // Nothing of that owner outlives its one handle.
    expect({ holds: lock.holds, lockedAfterRelease: await t.other.isLocked('k') }).toEqual({
      holds: 1,
      lockedAfterRelease: false,
    });
    const next = await t.other.tryAcquire('k');
    expect(next).not.toBeNull();
    await next?.release();
  }, 20_000);

  // The undo sent before the next attempt may be lost in turn, before it ran: sent again before
  // the attempt after it, not given up.
  it('undoes that grant before the next attempt also when the first undo is dropped unsent', async () => {
    await using t = await droppingLocker(name, name, 200);
    const send = t.redis.sendCommand.bind(t.redis);
    let attemptScript: unknown;
    let undoDropped = false;
    // The first script of the owner's that is not its attempt's is the undo: held back by the
    // proxy as it is written, then dropped with the connection, never reaching Redis.
    t.redis.sendCommand = ((command: { name: string; args: unknown[] }, stream?: unknown) => {
      if (command.name === 'evalsha' && command.args.includes('worker-1')) {
        attemptScript ??= command.args[0];
        if (!undoDropped && command.args[0] !== attemptScript) {
          undoDropped = true;
          t.proxy.blackhole();
          setTimeout(() => {
            t.proxy.drop();
            setTimeout(() => t.proxy.pass(), 50);
          }, 50);
        }
      }
      return send(command as never, stream as never);
    }) as typeof t.redis.sendCommand;
    t.proxy.resetAfter(0, 'downstream', 1);
    const lock = await t.locker.acquire('k', { owner: 'worker-1', wait: 10_000 });
    expect({ resets: t.proxy.resets, undoDropped }).toEqual({ resets: 1, undoDropped: true });
    await lock.release();
    expect({ holds: lock.holds, lockedAfterRelease: await t.other.isLocked('k') }).toEqual({
      holds: 1,
      lockedAfterRelease: false,
    });
  }, 20_000);

  // A call that ends with its granting attempt unanswered (a single try, a wait that ran out)
  // sends no next attempt: the grant is undone when the call ends, or the key would stay held by
  // nobody for the whole lease.
  it.each([
    ['a fresh owner', {}],
    ['an explicit owner', { owner: 'worker-2' }],
  ])(
    "%s's single try whose granting reply a reset dropped leaves the key free",
    async (_who, given) => {
      await using t = await droppingLocker(name);
      t.proxy.resetAfter(0, 'downstream', 1);
      const tried = await t.locker
        .tryAcquire('single', { ...given, ttl: 30_000 })
        .catch((error: unknown) => error);
      expect(tried).toBeInstanceOf(LockUnavailableError);
      expect(t.proxy.resets).toBe(1);
      // Well within the 30 s lease the dropped grant would otherwise hold the key for.
      await waitFor('the dropped grant undone', async () => !(await t.other.isLocked('single')), {
        timeout: 5_000,
      });
      const next = await t.other.tryAcquire('single');
      expect(next).not.toBeNull();
      await next?.release();
    },
    20_000,
  );

  // A format without an undo of its own (a protocol written outside this package may have none)
  // could only take off one of the owner's holds, whether or not the attempt ran: nothing is sent.
  it("sends no release for an explicit owner's dropped attempt when the format has no undo", async () => {
    const { undo: _undo, ...withoutUndo } = name === 'token' ? tokenProtocol() : legacyProtocol();
    await using t = await droppingLocker(name, withoutUndo, 200);
    const held = await t.other.acquire('shared', { owner: 'worker-3', ttl: 30_000 });
    // The attempt never reaches the server: held back, then dropped with its connection.
    t.proxy.blackhole();
    const tried = t.locker.tryAcquire('shared', { owner: 'worker-3' }).catch((error: unknown) => error);
    await pause(80);
    t.proxy.drop();
    await pause(50);
    t.proxy.pass();
    expect(await tried).toBeInstanceOf(LockUnavailableError);
    await waitFor('the client back', async () => t.redis.status === 'ready', { interval: 5 });
    // Behind anything the call's end sent on that client.
    await t.redis.ping();
    expect((await t.other.inspect('shared')).holds).toBe(1);
    expect(await held.release()).toBe('released');
  }, 20_000);
});
