import { createLocker, ReplicationError } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandCalls } from '../faults/support/stats.js';

async function replicaOf(master: RedisServer): Promise<RedisServer> {
  const replica = await startRedis({ config: { replicaof: `${master.host} ${master.port}` } });
  const client = replica.client();
  for (;;) {
    const info = await client.info('replication');
    if (info.includes('master_link_status:up')) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // The replica has acknowledged a write: from here on only the gating is under test.
  const warm = master.client();
  await warm.set('warm-up', '1', 'PX', 60_000);
  expect(await warm.call('WAIT', 1, 10_000)).toBe(1);
  return replica;
}

describe('WAIT gating on replicas', () => {
  let master: RedisServer;
  let replica: RedisServer;
  beforeAll(async () => {
    master = await startRedis();
    replica = await replicaOf(master);
  });
  afterAll(async () => {
    replica.resume();
    await replica.stop();
    await master.stop();
  });

  it("'auto' (the default) waits for the replica and hands out a lock the replica has", async () => {
    const locker = createLocker({ redis: master.client() });
    const waits = () => commandCalls(master.client()).then((calls) => calls.get('wait') ?? 0);
    // Loads the scripts first: the acquisition counted below is one of a used locker (EVALSHA).
    await (await locker.acquire('replicated-warm-up', { ttl: 10_000 })).release();
    const before = await waits();
    const lock = await locker.acquire('replicated', { ttl: 10_000 });
    // The acquisition sent exactly one WAIT: on loopback the replica has the write at once
    // anyway, so the replica's copy alone would not show that the default gates on it.
    expect((await waits()) - before).toBe(1);
    expect(await replica.client().hgetall('{lock:replicated}')).toMatchObject({
      [lock.owner]: '1',
      '': String(lock.fence),
    });
    await lock.release();
    await locker.close();
  });

  it("'auto' (the default) refuses a lock the (frozen) replica does not confirm, and leaves no key", async () => {
    // A locker's first acquisition under 'auto' has no WAIT allowance on top of the command
    // timeout (it has not seen the replicas yet): the WAIT's 250 ms of 500 would leave a loaded
    // host 250 ms for the round trips around it (the replicas asked for twice, the script, the
    // undo), and an answer past it is LockUnavailableError, not the refusal under test.
    const locker = createLocker({ redis: master.client(), commandTimeout: 5_000 });
    // Frozen, the replica still counts as connected on the master but acknowledges nothing.
    replica.pause();
    try {
      const error = await locker
        .acquire('auto-unconfirmed', { ttl: 10_000, wait: 0 })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReplicationError);
      expect((error as ReplicationError).confirmed).toBe(0);
      expect(await master.client().exists('{lock:auto-unconfirmed}')).toBe(0);
    } finally {
      replica.resume();
      await locker.close();
    }
  });

  it('releases a lock no replica confirmed and reports ReplicationError', async () => {
    // The command timeout is not under test: a loaded host's round trips must not end the call first.
    const locker = createLocker({
      redis: master.client(),
      replication: { replicas: 1, timeout: 100 },
      commandTimeout: 5_000,
    });
    replica.pause();
    try {
      const error = await locker.acquire('unconfirmed', { ttl: 10_000, wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReplicationError);
      expect((error as ReplicationError).confirmed).toBe(0);
      expect(await master.client().exists('{lock:unconfirmed}')).toBe(0);
    } finally {
      replica.resume();
      await locker.close();
    }
  });

  it('undoes a lock whose WAIT failed after the write (a user the ACL denies WAIT): the error surfaces, no lock is left', async () => {
    const admin = master.client();
    await admin.call('ACL', 'SETUSER', 'nowait', 'on', '>pw', '~*', '&*', '+@all', '-wait');
    const locker = createLocker({
      redis: master.client({ username: 'nowait', password: 'pw' }),
      replication: { replicas: 1, timeout: 100 },
    });
    try {
      const error = await locker.acquire('wait-denied', { ttl: 10_000, wait: 0 }).catch((e: unknown) => e);
      expect((error as Error).message).toMatch(/NOPERM/);
      expect(await admin.exists('{lock:wait-denied}')).toBe(0);
    } finally {
      await locker.close();
    }
  });

  it('replication false skips WAIT even with replicas connected', async () => {
    const locker = createLocker({ redis: master.client(), replication: false });
    replica.pause();
    try {
      const lock = await locker.acquire('ungated', { ttl: 10_000, wait: 0 });
      expect(lock.fence).toBeGreaterThan(0);
      await lock.release();
    } finally {
      replica.resume();
      await locker.close();
    }
  });
});
