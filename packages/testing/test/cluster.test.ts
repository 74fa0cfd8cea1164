import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminClient } from '../src/admin.js';
import { type RedisCluster, startCluster } from '../src/index.js';
import { alive, pidsOf } from './proc.js';

let cluster: RedisCluster;
let client: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ masters: 3, replicasPerMaster: 1 });
  client = cluster.client();
});

afterAll(() => cluster.stop());

/** A key whose slot lies in [start, end], found by asking the server to hash candidates. */
async function keyInRange(start: number, end: number): Promise<string> {
  const admin = adminClient(cluster.masters[0]!);
  for (let i = 0; ; i++) {
    const key = `key:${i}`;
    const slot = (await admin.call('CLUSTER', 'KEYSLOT', key)) as number;
    if (slot >= start && slot <= end) return key;
  }
}

describe('startCluster', () => {
  it('assigns all 16384 slots to the masters in contiguous ranges', () => {
    expect(cluster.masters).toHaveLength(3);
    expect(cluster.replicas).toHaveLength(3);
    expect(cluster.nodes).toHaveLength(6);
    expect(cluster.slotRanges.map(({ start, end }) => [start, end])).toEqual([
      [0, 5460],
      [5461, 10921],
      [10922, 16383],
    ]);
    expect(cluster.startupNodes).toEqual(cluster.nodes.map(({ host, port }) => ({ host, port })));
  });

  it('reports cluster_state:ok on every node', async () => {
    for (const node of cluster.nodes) {
      expect(await node.client().call('CLUSTER', 'INFO')).toContain('cluster_state:ok');
    }
  });

  it('serves a key in every master slot range through the Cluster client, stored on that master', async () => {
    for (const { start, end, master } of cluster.slotRanges) {
      const key = await keyInRange(start, end);
      await client.set(key, `on ${master.port}`);
      expect(await client.get(key)).toBe(`on ${master.port}`);
      expect(await master.client().get(key)).toBe(`on ${master.port}`);
    }
  });

  it('gives each master its own replica, linked and in sync', async () => {
    for (const [i, replica] of cluster.replicas.entries()) {
      const replication = await replica.client().info('replication');
      expect(replication).toContain('role:slave');
      expect(replication).toContain(`master_port:${cluster.masters[i]!.port}`);
      expect(replication).toContain('master_link_status:up');
    }
  });

  it('refuses bad sizes before starting anything, naming the value', async () => {
    await expect(startCluster({ masters: 0 })).rejects.toThrow('masters must be an integer >= 1, got 0');
    await expect(startCluster({ replicasPerMaster: -1 })).rejects.toThrow(
      'replicasPerMaster must be an integer >= 0, got -1',
    );
    await expect(startCluster({ nodeTimeout: Number.NaN })).rejects.toThrow(
      'nodeTimeout must be an integer >= 1, got NaN',
    );
  });

  it('stop() leaves none of its processes alive', async () => {
    const pids = pidsOf(cluster.nodes);
    expect(pids.every(alive)).toBe(true);
    await cluster.stop();
    expect(pids.filter(alive)).toEqual([]);
  });
});
