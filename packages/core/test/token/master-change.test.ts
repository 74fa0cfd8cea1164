import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, type Lock, type LockLostError, type LockProtocol, tokenProtocol } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

const EPOCH = 2 ** 32;

/** Resolves with the loss reason once the handle's signal aborts. */
function lossOf(lock: Lock): Promise<string> {
  return new Promise((resolve) => {
    lock.signal.addEventListener('abort', () => resolve((lock.signal.reason as LockLostError).reason), {
      once: true,
    });
  });
}

/** The token protocol without its fence counter: a backend cannot stamp it (the unmitigated variant). */
function unstamped(): LockProtocol {
  const { fenceCounter: _, ...protocol } = tokenProtocol();
  return protocol;
}

/**
 * Counts the commands `name` that `redis` sends from now on; those `held` (by their arguments)
 * are written `ms` later, as if their replies came in a later read.
 */
function sendsOf(
  redis: Redis,
  name: string,
  held: (args: unknown[]) => boolean,
  ms: number,
): { held: number; other: number } {
  const counts = { held: 0, other: 0 };
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: never[]) => {
    if (command.name !== name) return send(command as never, ...rest);
    if (!held(command.args)) {
      counts.other += 1;
      return send(command as never, ...rest);
    }
    counts.held += 1;
    setTimeout(() => send(command as never, ...rest), ms);
    return (command as unknown as { promise: Promise<unknown> }).promise;
  }) as typeof redis.sendCommand;
  return counts;
}

describe('a change of master (S12/S13)', () => {
  it('a restart with another run id: unconfirmed holds are lost (failover), the counter moves to the next epoch once', async () => {
    await using server = await startRedis({ persistence: true });
    const redis = server.client();
    const locker = createLocker({ redis, replication: false });
    const held = await locker.acquire('order:1', { ttl: 60_000 });
    const before = await locker.acquire('order:2', { ttl: 60_000 });
    const lost = lossOf(held);
    await server.restart();
    expect(await lost).toBe('failover');
    expect(before.signal.aborted).toBe(true);
    // The old master's last fence was `before.fence`; the new epoch starts above every value it could reach.
    const after = await locker.acquire('order:3', { ttl: 60_000 });
    expect(after.fence).toBe(EPOCH + before.fence + 1 - (before.fence % EPOCH));
    // Another locker meeting the stamped counter does not raise it again.
    const other = createLocker({ redis: server.client(), replication: false });
    expect((await other.acquire('order:4', { ttl: 60_000 })).fence).toBe(after.fence + 1);
    await Promise.all([locker.close(), other.close()]);
  });

  it('unmitigated variant: without the stamp, the counter goes on from where the new master stands (the hold is still lost)', async () => {
    await using server = await startRedis({ persistence: true });
    const locker = createLocker({ redis: server.client(), replication: false, protocol: unstamped() });
    const before = await locker.acquire('order:1', { ttl: 60_000 });
    const lost = lossOf(before);
    await server.restart();
    const after = await locker.acquire('order:2', { ttl: 60_000 });
    expect(after.fence).toBe(before.fence + 1);
    // The change itself is still seen: a format without a counter has the run id read alone.
    expect(await lost).toBe('failover');
    await locker.close();
  });

  it.each([
    ['an extend()', false],
    ['a renewal', true],
  ])(
    '%s written to a server restarted empty before the stamp that tells of it still ends the hold as a failover, not taken',
    async (_, renew) => {
      await using server = await startRedis();
      const redis = server.client();
      // Long enough for a call queued while the server is down to wait for it.
      const locker = createLocker({ redis, replication: false, commandTimeout: 20_000 });
      const lock = await locker.acquire('order:1', { ttl: renew ? 6_000 : 60_000, renew });
      const lost = lossOf(lock);
      await server.kill();
      await waitFor('the client to see the server gone', async () => redis.status !== 'ready');
      // ioredis writes what it queued meanwhile on the new connection before it emits 'ready', on
      // which the stamp is sent. Their replies may come in one read or in two: the stamp's is
      // held back here, as a separate read would have it processed after the call's.
      const sends = sendsOf(
        redis,
        'evalsha',
        (args) => args.some((arg) => String(arg).endsWith(':epoch')),
        300,
      );
      const extended = renew ? undefined : lock.extend(60_000).catch((error: unknown) => error);
      // The watchdog renews every 2 s: one renewal is queued while the server is down.
      if (renew) await waitFor('a renewal queued while the server is down', async () => sends.other > 0);
      await server.restart();
      expect(await lost).toBe('failover');
      expect(sends.held).toBeGreaterThan(0);
      expect(await extended).toBe(renew ? undefined : lock.signal.reason);
      await locker.close();
    },
  );

  it("a refused renewal waits for the stamp under way on its own: the batch's other hold is renewed meanwhile", async () => {
    await using server = await startRedis();
    const redis = server.client();
    const locker = createLocker({ redis, replication: false, commandTimeout: 1_000 });
    const other = createLocker({ redis: server.client(), replication: false });
    const kept = await locker.acquire('order:1', { ttl: 3_000, renew: true });
    const taken = await locker.acquire('order:2', { ttl: 3_000, renew: true });
    const lost = lossOf(taken);
    const renewedKept: string[] = [];
    const onExtend = (message: unknown) => {
      const { key } = message as { key: string };
      if (key === 'order:1') renewedKept.push(key);
    };
    subscribe('lock:extend', onExtend);
    try {
      // A reconnect to the same server: its stamp, due again, is held back past both leases.
      const sends = sendsOf(
        redis,
        'evalsha',
        (args) => args.some((arg) => String(arg).endsWith(':epoch')),
        4_000,
      );
      redis.disconnect(true);
      await waitFor('the stamp of the new connection to be sent', async () => sends.held > 0);
      await server.client().del('{lock:order:2}');
      await other.acquire('order:2', { ttl: 60_000 });
      // Renewed every second, order:1 is renewed while the stamp is still held back.
      await waitFor('order:1 to be renewed', async () => renewedKept.length > 0);
      expect(sends.held).toBeGreaterThan(0);
      expect(await lost).toBe('taken');
      expect(kept.signal.aborted).toBe(false);
    } finally {
      unsubscribe('lock:extend', onExtend);
      await Promise.all([locker.close(), other.close()]);
    }
  });

  it('a renewal answered READONLY (the master was demoted under a live connection) ends the hold as a failover', async () => {
    await using server = await startRedis();
    await using other = await startRedis({ config: { replicaof: `${server.host} ${server.port}` } });
    const locker = createLocker({ redis: server.client(), replication: false });
    const lock = await locker.acquire('order:1', { ttl: 900, renew: true });
    const lost = lossOf(lock);
    await waitFor(
      'the lock to reach the replica',
      async () => (await other.client().exists('{lock:order:1}')) === 1,
    );
    // A failover by hand: the replica takes over with the lock, the old master follows it.
    await other.client().call('REPLICAOF', 'NO', 'ONE');
    await server.client().call('REPLICAOF', other.host, String(other.port));
    expect(await lost).toBe('failover');
    await locker.close();
  });

  it('a user the ACL denies the stamp locks without epochs, after one warning', async () => {
    await using server = await startRedis();
    await server
      .client()
      .call('ACL', 'SETUSER', 'older', 'on', '>pw', '~{lock:order:*', '~{lock:#}:fences', '&*', '+@all');
    const warnings: (Error & { code?: string })[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const locker = createLocker({
      redis: server.client({ username: 'older', password: 'pw' }),
      replication: false,
      eviction: 'ignore',
    });
    try {
      expect((await locker.acquire('order:1', { ttl: 60_000 })).fence).toBe(1);
      expect((await locker.acquire('order:2', { ttl: 60_000 })).fence).toBe(2);
      await waitFor('the warning', async () => warnings.length > 0);
      expect(warnings.map((warning) => warning.code)).toEqual(['ERR_LOCK_FENCE_EPOCH']);
      expect(await server.client().exists('{lock:#}:fences:epoch')).toBe(0);
    } finally {
      process.off('warning', onWarning);
      await locker.close();
    }
  });

  it('a counter made by an earlier version is stamped without a raise; a fresh namespace writes nothing before its first lock', async () => {
    await using server = await startRedis();
    const redis = server.client();
    await redis.set('{lock:#}:fences', '41');
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    const locker = createLocker({ redis, replication: false });
    expect((await locker.acquire('order:1', { ttl: 60_000 })).fence).toBe(42);
    expect(await redis.get('{lock:#}:fences:epoch')).toMatch(/^[0-9a-f]{40}$/);
    const fresh = createLocker({ redis, replication: false, prefix: 'fresh:' });
    await expect(fresh.acquire('x', { ttl: -1 })).rejects.toThrow(/ttl/);
    expect(await redis.exists('{fresh:#}:fences', '{fresh:#}:fences:epoch')).toBe(0);
    const first = await fresh.acquire('x', { ttl: 60_000 });
    expect(first.fence).toBe(1);
    // The acquisition that made the counter stamped it with its master.
    expect(await redis.get('{fresh:#}:fences:epoch')).toBe(await redis.get('{lock:#}:fences:epoch'));
    await Promise.all([locker.close(), fresh.close()]);
    // The stamps also read the server's clock, which agrees with ours here: nothing to warn about.
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', onWarning);
    expect(warnings).toEqual([]);
  });
});
