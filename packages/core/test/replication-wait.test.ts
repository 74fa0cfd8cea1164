import { createLocker, type LockLostError, ReplicationError } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callsBetween, commandCalls } from './faults/support/stats.js';

/** WAIT gating (`replication`): one WAIT per grant, none behind a refused attempt. */
let master: RedisServer;
let replica: RedisServer;
let admin: Redis;
beforeAll(async () => {
  master = await startRedis();
  replica = await startRedis({ config: { replicaof: `${master.host} ${master.port}` } });
  await waitFor('the replica to be in sync', async () =>
    (await replica.client().info('replication')).includes('master_link_status:up'),
  );
  admin = master.client();
});
afterAll(async () => {
  replica?.resume();
  await replica?.stop();
  await master?.stop();
});

/** How many WAITs the master ran while `fn` ran. */
async function waitsDuring(fn: () => Promise<void>): Promise<number> {
  const before = await commandCalls(admin);
  await fn();
  return callsBetween(before, await commandCalls(admin), ['wait']);
}

/** An acquisition (`wait: 0`) gated on the one replica, frozen meanwhile: how it ended and the WAITs the master ran. */
async function acquireWhileFrozen(protocol: 'token' | 'legacy', key: string) {
  const locker = createLocker({
    redis: master.client(),
    protocol,
    replication: { replicas: 1, timeout: 200 },
  });
  replica.pause();
  try {
    let error: unknown;
    const waits = await waitsDuring(async () => {
      error = await locker.acquire(key, { ttl: 10_000, wait: 0 }).catch((e: unknown) => e);
    });
    return { error, waits, held: (await locker.inspect(key)).held };
  } finally {
    replica.resume();
    await locker.close();
  }
}

describe.each(['token', 'legacy'] as const)('%s', (protocol) => {
  it('sends one WAIT, behind the grant, when the (frozen) replica confirms nothing, even on a server without its scripts', async () => {
    await admin.script('FLUSH');
    const { error, waits, held } = await acquireWhileFrozen(protocol, `cold-${protocol}`);
    expect(error).toBeInstanceOf(ReplicationError);
    expect(waits).toBe(1);
    expect(held).toBe(false);
  });

  it('sends no WAIT behind a refused attempt: a lagging replica does not hold the connection for it', async () => {
    const holder = createLocker({ redis: master.client(), protocol, replication: false });
    const busy = await holder.acquire(`busy-${protocol}`, { ttl: 30_000 });
    const { error, waits } = await acquireWhileFrozen(protocol, `busy-${protocol}`);
    expect(error).toMatchObject({ name: 'LockBusyError' });
    expect(waits).toBe(0);
    await busy.release();
    await holder.close();
  });
});

it('does not count a re-entry of a hold another locker took unconfirmed as confirmed: a master change ends it', async () => {
  const ungated = createLocker({ redis: master.client(), replication: false });
  const gated = createLocker({ redis: master.client(), replication: { replicas: 1, timeout: 1_000 } });
  // One explicit owner: Redis counts the gated call as a re-entry of the ungated hold.
  const first = await ungated.acquire('reentered', { ttl: 60_000, owner: 'shared' });
  const again = await gated.acquire('reentered', { ttl: 60_000, owner: 'shared' });
  expect(again.holds).toBe(2);
  // Restarted empty: the keys are gone with it, as after a failover that lost them.
  await master.restart();
  await waitFor('the ungated hold to end', async () => first.signal.aborted, { timeout: 10_000 });
  await waitFor('the re-entered hold to end', async () => again.signal.aborted, { timeout: 10_000 });
  expect((again.signal.reason as LockLostError).reason).toBe('failover');
  await Promise.all([ungated.close(), gated.close()]);
  await waitFor('the replica to be in sync again', async () =>
    (await replica.client().info('replication')).includes('master_link_status:up'),
  );
});
