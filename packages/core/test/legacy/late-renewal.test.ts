import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, type Lock, type Locker, LockUnavailableError, legacyProtocol } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useRedis } from './fixture.js';

const t = useRedis();

describe('a legacy renewal that Redis ran but answered too late (its new timestamp never reached us)', () => {
  for (const unit of ['ms', 's'] as const) {
    it(`leaves the hold ours: the next extend and the release still work with the timestamp we had (${unit})`, async () => {
      const legacy = legacyProtocol({ unit });
      const held = await legacy.acquire(t.redis, 'k', 'a', 3_000);
      if (!held.acquired) throw new Error('not acquired');
      // A longer lease, so the late rewrite writes another timestamp even within one second.
      const late = await legacy.extend(t.redis, 'k', 'a', held.token, 10_000);
      expect(late).not.toBe(held.token);
      expect(await t.redis.get('k')).toBe(late);

      const renewed = await legacy.extend(t.redis, 'k', 'a', held.token, 20_000);
      expect(renewed).toBe(await t.redis.get('k'));
      expect(await t.redis.pttl('k')).toBeGreaterThan(19_000);
      expect(await legacy.release(t.redis, 'k', 'a', held.token)).toBe('released');
      expect(await t.redis.exists('k', '{k}:owner')).toBe(0);
    });
  }

  it('never renews or releases once a peer took the key over after it, with either timestamp', async () => {
    const legacy = legacyProtocol();
    const held = await legacy.acquire(t.redis, 'k', 'a', 3_000);
    if (!held.acquired) throw new Error('not acquired');
    const late = await legacy.extend(t.redis, 'k', 'a', held.token, 10_000);
    // A peer whose clock runs far ahead takes it over with GETSET and sets its own TTL.
    const theirs = String(Number(late) + 60_000);
    expect(await t.redis.getset('k', theirs)).toBe(late);
    await t.redis.pexpire('k', 8_000);
    for (const token of [held.token, late!]) {
      expect(await legacy.extend(t.redis, 'k', 'a', token, 10_000)).toBeNull();
      expect(await legacy.release(t.redis, 'k', 'a', token)).toBe('not-owner');
    }
    expect(await t.redis.get('k')).toBe(theirs);
    expect(await t.redis.pttl('k')).toBeLessThanOrEqual(8_000);
  });

  it('is ours only: another owner presenting the timestamp now stored neither renews nor releases it', async () => {
    const legacy = legacyProtocol();
    const held = await legacy.acquire(t.redis, 'k', 'a', 3_000);
    if (!held.acquired) throw new Error('not acquired');
    expect(await legacy.extend(t.redis, 'k', 'b', held.token, 10_000)).toBeNull();
    expect(await legacy.release(t.redis, 'k', 'b', held.token)).toBe('not-owner');
    expect(await legacy.inspect(t.redis, 'k')).toMatchObject({ held: true, owner: 'a', holds: 1 });
    expect(await t.redis.get('k')).toBe(held.token);
  });
});

/** A legacy locker that gives a command up after 200 ms, so that a delayed answer lands late. */
function impatientLocker(redis: Redis): Locker {
  return createLocker({
    redis,
    protocol: 'legacy',
    commandTimeout: 200,
    replication: false,
    eviction: 'ignore',
  });
}

describe('a legacy lock whose renewal is answered after commandTimeout', () => {
  it('lock.extend(): the next extend renews it and release frees it, instead of calling it taken', async () => {
    await using server = await startRedis();
    await using link = await proxiedClient(server);
    const admin = server.client();
    const locker = impatientLocker(link.redis);
    const lock = await locker.acquire('k', { ttl: 10_000 });
    // Loads the script, so that what lands late below is the renewal itself.
    await lock.extend(10_000);
    // The extend runs at once; its answer comes after the command timeout.
    link.proxy.delay({ downstream: 600 });
    const first = await lock.extend(20_000).catch((error: unknown) => error);
    await waitFor('the late extend to have landed', async () => (await admin.pttl('lock:k')) > 10_000);
    link.proxy.pass();
    const second = await lock.extend(10_000).then(
      () => 'extended',
      (error: unknown) => error,
    );
    const released = await lock.release();
    const left = await admin.exists('lock:k', '{lock:k}:owner');
    await locker.close();

    expect(first).toBeInstanceOf(LockUnavailableError);
    expect(second).toBe('extended');
    expect(released).toBe('released');
    expect(left).toBe(0);
  });

  it('a watchdog renewal: the hold is renewed on, not lost as taken', async () => {
    await using server = await startRedis();
    await using link = await proxiedClient(server);
    const admin = server.client();
    const locker = impatientLocker(link.redis);
    const rounds: boolean[] = [];
    const onRound = (message: unknown) => rounds.push((message as { failed: boolean }).failed);
    subscribe('lock:renew', onRound);
    const lock: Lock = await locker.acquire('w', { ttl: 3_000, renew: true });
    // Loads the script, so that what lands late below is the renewal itself.
    await lock.extend(3_000);
    const extended = await admin.get('lock:w');
    const validUntil = lock.validUntil;
    // The first renewal (due a third into the lease) runs, and is answered too late.
    link.proxy.delay({ downstream: 600 });
    await waitFor('the renewal to time out', async () => rounds.includes(true));
    expect(await admin.get('lock:w')).not.toBe(extended);
    link.proxy.pass();
    // The retry after the timed-out renewal settles it: renewed (later validity) or lost.
    await waitFor(
      'the next renewal to answer',
      async () => lock.signal.aborted || lock.validUntil > validUntil,
    );
    const lost = lock.signal.aborted ? String(lock.signal.reason) : null;
    const released = await lock.release();
    const left = await admin.exists('lock:w', '{lock:w}:owner');
    await locker.close();
    unsubscribe('lock:renew', onRound);

    expect(lost).toBeNull();
    expect(released).toBe('released');
    expect(left).toBe(0);
  });
});
