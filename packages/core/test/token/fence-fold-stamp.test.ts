import { createLocker } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';

const COUNTER = '{lock:#}:fences';

describe('a fence counter created by folding in the per-key counter of an earlier version', () => {
  for (const protocol of ['token', 'legacy'] as const) {
    it(`is stamped with its master at once (${protocol})`, async () => {
      await using server = await startRedis();
      const admin = server.client();
      await admin.set('{lock:m}:fence', '100');
      const locker = createLocker({
        redis: server.client(),
        protocol,
        replication: false,
        eviction: 'ignore',
      });
      const lock = await locker.acquire('m');
      const runId = /run_id:(\w+)/.exec(await admin.info('server'))![1];
      expect([lock.fence, await admin.get(COUNTER), await admin.get(`${COUNTER}:epoch`)]).toEqual([
        101,
        '101',
        runId,
      ]);
      await lock.release();
      await locker.close();
    });
  }

  it('so a replica promoted before any client stamped it hands out no fence the old master handed out', async () => {
    await using master = await startRedis();
    await using replica = await startRedis();
    const onMaster = master.client();
    const onReplica = replica.client();
    await onReplica.replicaof('127.0.0.1', master.port);
    await waitFor('the replica to link', async () =>
      (await onReplica.info('replication')).includes('master_link_status:up'),
    );
    await onMaster.set('{lock:m}:fence', '100');
    const before = createLocker({ redis: master.client(), replication: false, eviction: 'ignore' });
    await (await before.acquire('m')).release();
    await waitFor('the counter to replicate', async () => (await onReplica.get(COUNTER)) === '101');
    // Cut off and promoted: the old master goes on handing out fences the replica never gets.
    await onReplica.replicaof('NO', 'ONE');
    const lost: number[] = [];
    for (let i = 0; i < 3; i++) {
      const lock = await before.acquire('m');
      lost.push(lock.fence);
      await lock.release();
    }
    const after = createLocker({ redis: replica.client(), replication: false, eviction: 'ignore' });
    const next = await after.acquire('m');
    expect(lost).toEqual([102, 103, 104]);
    expect(next.fence).toBeGreaterThan(Math.max(...lost));
    await next.release();
    await before.close();
    await after.close();
  });
});
