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
async function keyInRange(start: number, end: number, within = cluster): Promise<string> {
  const admin = adminClient(within.masters[0]!);
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

describe('RedisCluster.failover', () => {
  let failing: RedisCluster;

  beforeAll(async () => {
    failing = await startCluster({ masters: 3, replicasPerMaster: 1 });
  });

  afterAll(() => failing.stop());

  /** Every node's CLUSTER SLOTS: the port of the master it routes `slot` to. */
  async function routedPorts(slot: number): Promise<number[]> {
    return Promise.all(
      failing.nodes.map(async (node) => {
        const ranges = (await node.client().call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
        const range = ranges.find(([start, end]) => slot >= start && slot <= end);
        return range![2][1];
      }),
    );
  }

  it('refuses a bad shard or option before any write, naming the value', async () => {
    await expect(failing.failover({} as never)).rejects.toThrow(
      'failover() takes { key } or { slot }, got {}',
    );
    await expect(failing.failover({ key: 'a', slot: 1 } as never)).rejects.toThrow(
      'failover() takes { key } or { slot }, got {"key":"a","slot":1}',
    );
    await expect(failing.failover({ slot: 16_384 })).rejects.toThrow(
      'slot must be an integer in 0..16383, got 16384',
    );
    await expect(failing.failover({ slot: 1.5 })).rejects.toThrow(
      'slot must be an integer in 0..16383, got 1.5',
    );
    await expect(failing.failover({ slot: 0 }, { mode: 'NOW' as never })).rejects.toThrow(
      "mode must be 'FORCE' or 'TAKEOVER', got NOW",
    );
    await expect(failing.failover({ slot: 0 }, { timeout: 0 })).rejects.toThrow(
      'timeout must be an integer >= 1, got 0',
    );
    for (const [i, replica] of failing.replicas.entries()) {
      expect(await replica.client().info('replication')).toContain(`master_port:${failing.masters[i]!.port}`);
    }
  });

  it('swaps the shard’s master and replica, visible on every node and to a Cluster client; and back with TAKEOVER', async () => {
    const { start, end } = failing.slotRanges[2]!;
    const key = await keyInRange(start, end, failing);
    const slot = (await failing.masters[0]!.client().call('CLUSTER', 'KEYSLOT', key)) as number;
    const client = failing.client();
    await client.set(key, 'kept');

    const moved = await failing.failover({ key });
    expect(moved.promoted).toBe(failing.replicas[2]);
    expect(moved.demoted).toBe(failing.masters[2]);
    expect(moved.slots).toEqual([[start, end]]);
    expect(await moved.promoted.client().info('replication')).toContain('role:master');
    const demoted = await moved.demoted.client().info('replication');
    expect(demoted).toContain('role:slave');
    expect(demoted).toContain(`master_port:${moved.promoted.port}`);
    expect(await routedPorts(slot)).toEqual(failing.nodes.map(() => moved.promoted.port));
    // The old master answers with a redirection, the new one serves the key itself.
    await expect(moved.demoted.client().get(key)).rejects.toThrow(
      `MOVED ${slot} 127.0.0.1:${moved.promoted.port}`,
    );
    expect(await moved.promoted.client().get(key)).toBe('kept');
    expect(await client.get(key)).toBe('kept');
    expect(client.slots[slot]![0]).toBe(`127.0.0.1:${moved.promoted.port}`);

    const back = await failing.failover({ slot }, { mode: 'TAKEOVER' });
    expect(back.promoted).toBe(failing.masters[2]);
    expect(back.demoted).toBe(failing.replicas[2]);
    expect(await failing.replicas[2]!.client().info('replication')).toContain(
      `master_port:${failing.masters[2]!.port}`,
    );
    expect(await routedPorts(slot)).toEqual(failing.nodes.map(() => failing.masters[2]!.port));
    expect(await client.get(key)).toBe('kept');
  });

  it('FORCE promotes the replica of a paused master, with no handshake', async () => {
    const master = failing.masters[0]!;
    master.pause();
    try {
      const moved = await failing.failover({ slot: 0 }, { mode: 'FORCE' });
      expect(moved.promoted).toBe(failing.replicas[0]);
      expect(await moved.promoted.client().info('replication')).toContain('role:master');
      const running = failing.nodes.filter((node) => node !== master);
      const ports = await Promise.all(
        running.map(async (node) => {
          const ranges = (await node.client().call('CLUSTER', 'SLOTS')) as [
            number,
            number,
            [string, number],
          ][];
          return ranges.find(([start]) => start === 0)![2][1];
        }),
      );
      expect(ports).toEqual(running.map(() => moved.promoted.port));
    } finally {
      master.resume();
    }
  });

  it('rejects naming the step that did not converge: a coordinated failover of a paused master', async () => {
    const master = failing.masters[1]!;
    master.pause();
    try {
      await expect(
        failing.failover({ slot: failing.slotRanges[1]!.start }, { timeout: 2_000 }),
      ).rejects.toThrow(
        `timed out after 2000 ms waiting for replica port ${failing.replicas[1]!.port} to take slot 5461 over from port ${master.port} (CLUSTER FAILOVER)`,
      );
    } finally {
      master.resume();
    }
  });
});
