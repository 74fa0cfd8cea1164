import {
  createLocker,
  type Lock,
  LockLostError,
  LockUnavailableError,
  type LostEvent,
  lockEvents,
} from '@lock/core';
import { commandsInFlight, proxiedClient, startRedis, waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';

const options = { replication: false, eviction: 'ignore' } as const;

/**
 * Each protocol with the Redis key of lock `key` under the default prefix, and every key an
 * operator deletes to free it for another owner: a legacy lock's owner record keeps our other
 * owners out for the holder's lease when only the key is gone (a legacy peer's DEL).
 */
const protocols = [
  { protocol: 'token', lockKey: (key: string) => `{lock:${key}}`, freed: (key: string) => [`{lock:${key}}`] },
  {
    protocol: 'legacy',
    lockKey: (key: string) => `lock:${key}`,
    freed: (key: string) => [`lock:${key}`, `{lock:${key}}:owner`],
  },
] as const;

describe.each(protocols)('$protocol protocol', ({ protocol, lockKey, freed }) => {
  it('rejects using() with LockLostError when only its release finds the lock deleted or taken', async () => {
    await using server = await startRedis();
    const redis = server.client();
    const locker = createLocker({ redis, protocol, ...options });
    const other = createLocker({ redis, protocol, ...options });

    // Deleted under the section (an operator's DEL, a foreign force-unlock): nothing noticed it before the release.
    const deleted = await locker
      .using('d', { ttl: 30_000 }, async () => {
        await redis.del(lockKey('d'));
        return 'done';
      })
      .catch((error: unknown) => error);
    expect(deleted).toBeInstanceOf(LockLostError);
    expect(deleted).toMatchObject({
      key: 'd',
      reason: 'taken',
      outcome: { status: 'fulfilled', value: 'done' },
    });

    // Deleted, then taken by another owner, whose hold the release must leave alone.
    let taker: Lock | undefined;
    const failed = new Error('the section failed');
    const taken = await locker
      .using('t', { ttl: 30_000 }, async () => {
        await redis.del(...freed('t'));
        taker = await other.acquire('t', { ttl: 30_000, wait: 0 });
        throw failed;
      })
      .catch((error: unknown) => error);
    expect(taken).toBeInstanceOf(LockLostError);
    expect(taken).toMatchObject({ reason: 'taken', outcome: { status: 'rejected', reason: failed } });
    expect(await other.isLocked('t')).toBe(true);
    expect(await taker?.release()).toBe('released');

    // rejectOnLoss: false answers the section's own outcome.
    const kept = await locker.using('k', { ttl: 30_000, rejectOnLoss: false }, async () => {
      await redis.del(lockKey('k'));
      return 'kept';
    });
    expect(kept).toBe('kept');

    // A section whose lock stayed ours resolves as before.
    expect(await locker.using('s', { ttl: 30_000 }, () => 'fine')).toBe('fine');
    await Promise.all([locker.close(), other.close()]);
  });

  it("rejects an enclosing using() too when a re-entered section's release finds the lock deleted", async () => {
    await using server = await startRedis();
    const redis = server.client();
    const locker = createLocker({ redis, protocol, ...options });
    let outer: Lock | undefined;
    const outcome = await locker
      .using('r', { ttl: 30_000 }, async (lock) => {
        outer = lock;
        const inner = await locker
          .using('r', { ttl: 30_000 }, async () => {
            await redis.del(lockKey('r'));
            return 'inner';
          })
          .catch((error: unknown) => error);
        expect(inner).toMatchObject({ reason: 'taken', outcome: { status: 'fulfilled', value: 'inner' } });
        // The hold both sections shared is gone: the enclosing one learns it at once.
        expect(lock.signal.aborted).toBe(true);
        return 'outer';
      })
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(LockLostError);
    expect(outcome).toMatchObject({ reason: 'taken', outcome: { status: 'fulfilled', value: 'outer' } });
    expect(outer?.signal.reason).toMatchObject({ reason: 'taken' });
    await locker.close();
  });

  it('resolves using() when its release freed the lock and only a copy resent after the lost reply found it gone', async () => {
    await using server = await startRedis();
    await using cut = await proxiedClient(server);
    // The copy is answered after a reconnect: well within this deadline, on a loaded machine too.
    const locker = createLocker({ redis: cut.redis, protocol, commandTimeout: 10_000, ...options });
    const other = createLocker({ redis: server.client(), protocol, ...options });
    // The release script loaded: a release answered NOSCRIPT would lose that answer instead.
    await locker.using('warm-up', () => {});
    let handle: Lock | undefined;
    const done = await locker.using('k', { ttl: 30_000 }, (lock) => {
      handle = lock;
      // The release runs on the server, its reply is lost, and ioredis sends it again once reconnected.
      cut.proxy.resetAfter(0, 'downstream', 1);
      return 'done';
    });
    expect(done).toBe('done');
    expect(cut.proxy.resets).toBe(1);
    // The answer using() had: the copy's, which found the key the first copy deleted gone.
    expect(await handle?.release()).toBe('not-owner');
    expect(await other.isLocked('k')).toBe(false);
    await Promise.all([locker.close(), other.close()]);
  });

  it('resolves using() when a retried release finds the key its first, unanswered call freed', async () => {
    await using server = await startRedis();
    // A command whose connection closes fails at once instead of being sent again on reconnect:
    // the first release is never answered, late or not (a late answer would tell the retry).
    await using cut = await proxiedClient(server, { redis: { maxRetriesPerRequest: 0 } });
    const locker = createLocker({ redis: cut.redis, protocol, commandTimeout: 10_000, ...options });
    const other = createLocker({ redis: server.client(), protocol, ...options });
    // The release script loaded: a release answered NOSCRIPT would not have run.
    await locker.using('warm-up', () => {});
    const lost: LostEvent[] = [];
    const onLost = (event: unknown) => {
      if ((event as LostEvent).key === 'retried') lost.push(event as LostEvent);
    };
    lockEvents.lost.subscribe(onLost);
    try {
      let handle: Lock | undefined;
      const done = await locker.using('retried', { ttl: 30_000 }, async (lock) => {
        handle = lock;
        // The release runs on the server, and its reply is lost with the connection.
        cut.proxy.resetAfter(0, 'downstream', 1);
        await expect(lock.release()).rejects.toBeInstanceOf(LockUnavailableError);
        expect(cut.proxy.resets).toBe(1);
        await waitFor('the client reconnected', async () => cut.redis.status === 'ready');
        // The retry, on a connection that stays open, finds the key the first call deleted gone.
        expect(await lock.release()).toBe('not-owner');
        return 'done';
      });
      expect(done).toBe('done');
      expect(handle?.signal.aborted).toBe(false);
      expect(lost).toEqual([]);
      expect(await other.isLocked('retried')).toBe(false);
    } finally {
      lockEvents.lost.unsubscribe(onLost);
    }
    await Promise.all([locker.close(), other.close()]);
  });

  it('resolves using() when its release was answered only after the lease could have run out by itself', async () => {
    await using server = await startRedis();
    await using cut = await proxiedClient(server);
    let skew = 0;
    const locker = createLocker({
      redis: cut.redis,
      protocol,
      commandTimeout: 10_000,
      clock: () => performance.now() + skew,
      ...options,
    });
    const inFlight = commandsInFlight(cut.redis);
    await locker.using('warm-up', () => {});
    // The key is gone when the release runs; its answer is held back until the lease has ended by
    // our clock: that answer cannot tell a key deleted under the section from one that expired
    // after it, once the section was done. Without (`declare`) or with the loss that ending is
    // declared as while the release waits.
    for (const declare of [false, true]) {
      let handle: Lock | undefined;
      let done = false;
      const running = locker.using(`k${declare}`, { ttl: 30_000 }, async (lock) => {
        handle = lock;
        await cut.redis.del(lockKey(`k${declare}`));
        cut.proxy.blackhole();
        done = true;
        return 'done';
      });
      await waitFor('the release in flight', async () => done && inFlight.pending() === 1);
      skew += 60_000;
      if (declare) expect(handle?.signal.reason).toMatchObject({ reason: 'expired' });
      cut.proxy.pass();
      expect(await running).toBe('done');
      expect(await handle?.release()).toBe('not-owner');
    }
    await locker.close();
  });
});
