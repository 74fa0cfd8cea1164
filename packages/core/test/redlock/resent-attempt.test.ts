import { createRedlock, QuorumError } from '@lock/core';
import { proxiedClient, startMasters, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

/**
 * An attempt that landed on every master but whose replies were cut is undone; with the
 * connections flapping, ioredis drops that undo (its offline queue is flushed once
 * `maxRetriesPerRequest` runs out) but still resends the attempt once a connection holds. The
 * grant the resent attempt answers, late, must be undone too: otherwise the key stays held by
 * an owner nobody has, for the whole ttl.
 */
it('undoes the late grant of an attempt resent after its undo was dropped', async () => {
  await using masters = await startMasters(3);
  const proxied = await Promise.all(
    masters.servers.map((server) =>
      proxiedClient(server, { redis: { maxRetriesPerRequest: 2, retryStrategy: () => 50 } }),
    ),
  );
  const direct = masters.clients();
  try {
    const locker = createRedlock({ clients: proxied.map((each) => each.redis), nodeTimeout: 100 });
    // Scripts loaded and the masters checked, so the attempt below is sent at once.
    await (await locker.acquire('warm-up', { ttl: 1_000 })).release();
    const lockKeys = async () => Promise.all(direct.map((redis) => redis.exists('{lock:k}')));

    for (const { proxy } of proxied) proxy.resetAfter(0, 'downstream');
    await expect(locker.tryAcquire('k', { ttl: 10_000 })).rejects.toBeInstanceOf(QuorumError);
    expect(await lockKeys()).toEqual([1, 1, 1]);
    // Long enough for ioredis to give up the undo (two retries 50 ms apart), never the attempt.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await lockKeys()).toEqual([1, 1, 1]);

    for (const { proxy } of proxied) proxy.pass();
    // Well within the 10 s the keys would otherwise keep.
    await waitFor('the resent grants undone', async () => (await lockKeys()).every((key) => key === 0), {
      timeout: 5_000,
    });
    const other = createRedlock({ clients: direct, nodeTimeout: 100 });
    const next = await other.tryAcquire('k', { ttl: 1_000 });
    expect(next).not.toBeNull();
    await next?.release();
    await Promise.all([locker.close(), other.close()]);
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
}, 30_000);
