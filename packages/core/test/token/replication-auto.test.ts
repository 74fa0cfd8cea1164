import { createLocker, type SingleBackendOptions, singleBackend, tokenProtocol } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

/**
 * Starts a replica of `master` and waits until it has synced (it acknowledges a write); `stop()`
 * takes it away and waits until the master counts no replica.
 */
async function syncedReplica(master: RedisServer) {
  const replica = await startRedis({ config: { replicaof: `${master.host} ${master.port}` } });
  const admin = master.client();
  const replicas = async () => /connected_slaves:(\d+)/.exec(await admin.info('replication'))?.[1];
  await waitFor('the replica to connect', async () => (await replicas()) === '1');
  await admin.set('warm-up', '1', 'PX', 60_000);
  expect(await admin.call('WAIT', 1, 10_000)).toBe(1);
  return {
    stop: async () => {
      await replica.stop();
      await waitFor('the master to see no replica', async () => (await replicas()) === '0');
    },
  };
}

it("'auto' takes a master that lost its replicas since it last asked at its word: the lock is granted, unconfirmed", async () => {
  await using master = await startRedis();
  const replica = await syncedReplica(master);
  const locker = createLocker({ redis: master.client() });
  // The first acquisition finds one replica and waits for it; 'auto' keeps that answer for 10 s.
  await (await locker.acquire('before', { ttl: 10_000 })).release();
  // As after a failover to a master that has no replica: WAIT can no longer be answered.
  await replica.stop();
  const lock = await locker.acquire('after', { ttl: 10_000, wait: 0 });
  expect((await locker.inspect('after')).owner).toBe(lock.owner);
  expect(await lock.release()).toBe('released');
  await locker.close();
});

it("adds WAIT's timeout to an attempt's deadline only once 'auto' has seen replicas, so a call made while Redis is down is not held longer", async () => {
  await using master = await startRedis();
  const backendOf = (replication?: SingleBackendOptions['replication']) =>
    singleBackend(master.client(), tokenProtocol(), { replication });
  const auto = backendOf();
  // Not seen yet: the attempt that first asks has time for a prompt WAIT within the command timeout.
  expect(auto.acquireAllowance).toBe(0);
  await auto.acquire('lock:alone', 'owner', 10_000);
  expect(auto.acquireAllowance).toBe(0);
  expect(backendOf({ replicas: 1, timeout: 400 }).acquireAllowance).toBe(400);
  expect(backendOf(false).acquireAllowance).toBe(0);

  const replica = await syncedReplica(master);
  const replicated = backendOf();
  await replicated.acquire('lock:replicated', 'owner', 10_000);
  expect(replicated.acquireAllowance).toBe(250);
  await Promise.all([auto.close(), replicated.close()]);
  await replica.stop();
});

it("'auto' asks again after a reconnect, which may have reached a master without replicas: concurrent acquisitions send no WAIT there, whose timeouts would queue on the connection", async () => {
  await using master = await startRedis();
  const replica = await syncedReplica(master);
  const redis = master.client();
  const locker = createLocker({ redis });
  await (await locker.acquire('before', { ttl: 10_000 })).release();
  await replica.stop();
  // As after a failover: the client reconnects, here to the same master, now without replicas.
  const ready = new Promise((resolve) => redis.once('ready', resolve));
  redis.disconnect(true);
  await ready;
  const waits: string[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    if (command.name.toLowerCase() === 'wait') waits.push(command.name);
    return send(command as never, ...(rest as []));
  }) as typeof redis.sendCommand;
  const locks = await Promise.all(
    ['a', 'b', 'c', 'd'].map((key) => locker.acquire(key, { ttl: 10_000, wait: 0 })),
  );
  expect(waits).toEqual([]);
  for (const lock of locks) expect(await lock.release()).toBe('released');
  await locker.close();
});
