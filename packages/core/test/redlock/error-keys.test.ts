import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type RedisMasters, startMasters } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReleaseEvent } from '../../src/engine/events.js';
import { LockBusyError, LockLostError, QuorumError } from '../../src/errors.js';
import { createEngine, createRedlock, quorumBackend } from '../../src/index.js';
import type { Locker } from '../../src/types.js';

// A backend sees only the Redis resource (prefix + key); the caller must see the key it gave.
let masters: RedisMasters;
let clients: Redis[];
let locker: Locker;
// Each call made while masters 1 and 2 are frozen waits this long for them; master 0 must answer
// within it even on a loaded host, or the errors would count three masters timed out, not two.
const nodeTimeout = 500;
beforeAll(async () => {
  masters = await startMasters(3);
  clients = masters.clients();
  locker = createRedlock({ clients, nodeTimeout });
});
afterAll(async () => {
  await locker.close();
  for (const client of clients) client.disconnect();
  await masters.stop();
});

/** Runs `fn` with masters 1 and 2 frozen (SIGSTOP), then thaws them and drains what they queued. */
async function withMajorityPaused<T>(fn: () => Promise<T>): Promise<T> {
  const paused = [masters.servers[1]!, masters.servers[2]!];
  for (const server of paused) server.pause();
  try {
    return await fn();
  } finally {
    for (const server of paused) server.resume();
    await Promise.all([clients[1]!.ping(), clients[2]!.ping()]);
  }
}

const caught = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );

describe('RedLock errors', () => {
  it('name the key the caller gave, never the prefixed resource, in .key and in the message', async () => {
    const key = 'rl:2';
    const holder = await locker.acquire(key, { ttl: 5_000 });
    const busy = await caught(locker.acquire(key, { ttl: 5_000, wait: 0 }));
    const [acquire, inspect, extend, release] = await withMajorityPaused(async () => [
      await caught(locker.acquire('rl:3', { ttl: 5_000, wait: 0 })),
      await caught(locker.inspect(key)),
      await caught(holder.extend(5_000)),
      await caught(holder.release()),
    ]);
    expect(busy).toBeInstanceOf(LockBusyError);
    expect((busy as LockBusyError).key).toBe(key);
    for (const [error, expected] of [
      [acquire, 'rl:3'],
      [inspect, key],
      [extend, key],
      [release, key],
    ] as const) {
      expect(error).toBeInstanceOf(QuorumError);
      expect(error).toMatchObject({ key: expected, needed: 2, timedOut: 2 });
      expect((error as QuorumError).message).toMatch(new RegExp(`^lock "${expected}" needs 2 masters`));
    }
    await holder.release();
    expect((await locker.inspect(key)).held).toBe(false);
  });

  it("name the caller's key as the cause of a lock lost to failed renewals", async () => {
    // Renewed a third of the way in, the renewal fails within two rounds of nodeTimeout, well
    // before the lease ends: one still unanswered by then would make the loss 'expired'.
    const holder = await locker.acquire('rl:renewed', { ttl: 3_000, renew: true });
    const lost = new Promise<unknown>((resolve) =>
      holder.signal.addEventListener('abort', () => resolve(holder.signal.reason), { once: true }),
    );
    const reason = await withMajorityPaused(() => lost);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason).toMatchObject({ key: 'rl:renewed', reason: 'renewal-failed' });
    expect((reason as LockLostError).cause).toBeInstanceOf(QuorumError);
    expect((reason as LockLostError).cause).toMatchObject({ key: 'rl:renewed' });
  });

  it("name the caller's key over the quorum backend in an engine of one's own, events included", async () => {
    const backend = quorumBackend({ clients, nodeTimeout });
    // As createRedlock does: the engine's own default (500 ms) would end a call before its rounds.
    const engine = createEngine(backend, { prefix: 'app:', commandTimeout: backend.callTimeout });
    const holder = await engine.acquire('own:1', { ttl: 5_000 });
    const events: ReleaseEvent[] = [];
    const onRelease = (event: unknown) => events.push(event as ReleaseEvent);
    subscribe('lock:release', onRelease);
    try {
      const [acquire, release] = await withMajorityPaused(async () => [
        await caught(engine.acquire('own:2', { ttl: 5_000, wait: 0 })),
        await caught(holder.release()),
      ]);
      expect(acquire).toBeInstanceOf(QuorumError);
      expect(acquire).toMatchObject({ key: 'own:2' });
      expect(release).toBeInstanceOf(QuorumError);
      expect(release).toMatchObject({ key: 'own:1' });
      expect(events.find((event) => event.result === 'error')?.error).toMatchObject({ key: 'own:1' });
    } finally {
      unsubscribe('lock:release', onRelease);
    }
    await holder.release();
    await engine.close();
  });
});
