import { startCluster, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { connectionOf } from '../../src/backends/connection-errors.js';

/**
 * A release's `not-owner` is Redis's word only when no connection that carried it closed before
 * its answer (a cluster resends a command its node's closing failed, to that node's new
 * connection): on a cluster every node's closes are counted, a node the pool made after a
 * close included, and the listeners go with the last user.
 */
it("counts the closes of every cluster node's connection, and stops listening when released", async () => {
  await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
  const redis = cluster.client();
  const connection = connectionOf(redis);
  const key = 'closes';
  await redis.set(key, '1');
  const admin = cluster.masters.map((each) => each.client());
  const kill = () =>
    Promise.all(admin.map((client) => client.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')));
  for (const round of [1, 2]) {
    const before = connection.closes;
    await kill();
    await waitFor(`round ${round}: the closes counted`, async () => connection.closes > before, {
      timeout: 10_000,
    });
    // The pool replaces the closed nodes: their successors are counted the same way.
    expect(await redis.get(key)).toBe('1');
  }
  const nodes = redis.nodes('all');
  const listeners = () => nodes.map((node) => [node.listenerCount('close'), node.listenerCount('end')]);
  const watching = listeners();
  connection.release();
  expect(listeners()).toEqual(watching.map(([close, end]) => [close! - 1, end! - 1]));
  expect(redis.listenerCount('+node')).toBe(0);
  redis.disconnect();
  await Promise.all(admin.map((client) => client.quit()));
}, 60_000);
