import { Cluster, type ClusterOptions } from 'ioredis';
import { adminClient } from './admin.js';
import { OwnedClients } from './clients.js';
import { startServers, stopAfter, stopServers } from './group.js';
import { info } from './info.js';
import type { Address, RedisServer, RedisServerOptions } from './server.js';
import { checkInteger } from './validate.js';
import { waitFor } from './wait.js';

/** Options of `startCluster`. */
export interface StartClusterOptions {
  /** Masters sharing the 16384 slots. Default: `3`. */
  masters?: number;
  /** Replicas of each master. Default: `1`. */
  replicasPerMaster?: number;
  /** `cluster-node-timeout` in ms: silence before a node is considered failing. Default: `2000`. */
  nodeTimeout?: number;
  /** Options of every node's process (cluster directives are added). Default: none. */
  server?: RedisServerOptions;
  /** Milliseconds to wait for the cluster to be formed and `cluster_state:ok` everywhere. Default: `30_000`. */
  timeout?: number;
}

/** The slots one master was given at start. */
export interface SlotRange {
  start: number;
  end: number;
  master: RedisServer;
}

/** A Redis Cluster with every slot assigned. */
export interface RedisCluster {
  /** The masters at start, in slot order. */
  readonly masters: readonly RedisServer[];
  /** The replicas at start: those of the first master, then the second's, and so on. */
  readonly replicas: readonly RedisServer[];
  readonly nodes: readonly RedisServer[];
  readonly slotRanges: readonly SlotRange[];
  /** ioredis `Cluster` startup nodes: every node. */
  readonly startupNodes: readonly Address[];
  /** A new ioredis `Cluster` client; `stop()` disconnects it. */
  client(options?: ClusterOptions): Cluster;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const slotCount = 16_384;

/**
 * Starts a cluster: assigns the slots in equal ranges (CLUSTER ADDSLOTSRANGE), joins the nodes
 * (CLUSTER MEET), attaches replicas (CLUSTER REPLICATE), and returns once every node reports
 * `cluster_state:ok` and sees the whole topology. Needs Redis 7 or later.
 */
export async function startCluster(options: StartClusterOptions = {}): Promise<RedisCluster> {
  const { masters: masterCount = 3, replicasPerMaster = 1, nodeTimeout = 2000, timeout = 30_000 } = options;
  checkInteger('masters', masterCount, 1);
  checkInteger('replicasPerMaster', replicasPerMaster, 0);
  checkInteger('nodeTimeout', nodeTimeout, 1);
  checkInteger('timeout', timeout, 1);
  const nodes = await startServers(masterCount * (1 + replicasPerMaster), {
    ...options.server,
    config: {
      ...options.server?.config,
      'cluster-enabled': 'yes',
      'cluster-config-file': 'nodes.conf',
      'cluster-node-timeout': nodeTimeout,
      // A node learns its own address from peers' MEETs; a lone master would have none to report.
      'cluster-announce-ip': '127.0.0.1',
    },
  });
  try {
    const masters = nodes.slice(0, masterCount);
    const slotRanges = masters.map((master, i) => ({
      start: Math.floor((i * slotCount) / masterCount),
      end: Math.floor(((i + 1) * slotCount) / masterCount) - 1,
      master,
    }));
    await form(nodes, slotRanges, replicasPerMaster, timeout);
    return new ClusterSetup(masters, nodes.slice(masterCount), nodes, slotRanges);
  } catch (error) {
    return stopAfter(error, nodes);
  }
}

async function form(
  nodes: RedisServer[],
  slotRanges: SlotRange[],
  replicasPerMaster: number,
  timeout: number,
): Promise<void> {
  // Distinct config epochs up front spare the nodes resolving epoch collisions one by one.
  await Promise.all(
    nodes.map((node, i) => adminClient(node).call('CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1))),
  );
  await Promise.all(
    slotRanges.map(({ start, end, master }) =>
      adminClient(master).call('CLUSTER', 'ADDSLOTSRANGE', String(start), String(end)),
    ),
  );
  const [first, ...others] = nodes;
  await Promise.all(
    others.map((node) => adminClient(first!).call('CLUSTER', 'MEET', node.host, String(node.port))),
  );
  await waitFor(
    'every cluster node to know every other',
    async () => {
      const views = await Promise.all(nodes.map(clusterView));
      return views.every((view) => view.filter((entry) => entry.connected).length === nodes.length);
    },
    { timeout },
  );
  const replicas = nodes.slice(slotRanges.length);
  await Promise.all(
    replicas.map(async (replica, i) => {
      const master = slotRanges[Math.floor(i / replicasPerMaster)]!.master;
      const masterId = (await adminClient(master).call('CLUSTER', 'MYID')) as string;
      await adminClient(replica).call('CLUSTER', 'REPLICATE', masterId);
    }),
  );
  await waitFor(
    'cluster_state:ok and the full topology on every node',
    async () => {
      for (const node of nodes) {
        const state = (await adminClient(node).call('CLUSTER', 'INFO')) as string;
        if (!state.includes('cluster_state:ok')) return false;
        const view = await clusterView(node);
        const withSlots = view.filter((entry) => entry.role === 'master' && entry.slots);
        const following = view.filter((entry) => entry.role === 'slave');
        if (withSlots.length !== slotRanges.length || following.length !== replicas.length) return false;
      }
      const links = await Promise.all(replicas.map((replica) => info(adminClient(replica), 'replication')));
      return links.every((link) => link.master_link_status === 'up');
    },
    { timeout },
  );
}

interface ViewEntry {
  role: 'master' | 'slave' | 'other';
  /** Known, reachable and not in handshake or failure. */
  connected: boolean;
  slots: boolean;
}

/** One node's `CLUSTER NODES`, reduced to what readiness needs. */
async function clusterView(node: RedisServer): Promise<ViewEntry[]> {
  const text = (await adminClient(node).call('CLUSTER', 'NODES')) as string;
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [, , flagText = '', , , , , link = '', ...slots] = line.split(' ');
      const flags = flagText.split(',');
      const healthy = !flags.some((flag) => ['handshake', 'noaddr', 'fail', 'fail?'].includes(flag));
      return {
        role: flags.includes('master') ? 'master' : flags.includes('slave') ? 'slave' : 'other',
        connected: healthy && (flags.includes('myself') || link === 'connected'),
        slots: slots.length > 0,
      };
    });
}

class ClusterSetup implements RedisCluster {
  readonly startupNodes: readonly Address[];
  private readonly clients = new OwnedClients();

  constructor(
    readonly masters: readonly RedisServer[],
    readonly replicas: readonly RedisServer[],
    readonly nodes: readonly RedisServer[],
    readonly slotRanges: readonly SlotRange[],
  ) {
    this.startupNodes = nodes.map(({ host, port }) => ({ host, port }));
  }

  client(options: ClusterOptions = {}): Cluster {
    const startupNodes = this.startupNodes.map((address) => ({ ...address }));
    return this.clients.add(new Cluster(startupNodes, options));
  }

  async stop(): Promise<void> {
    this.clients.disconnectAll();
    await stopServers(this.nodes);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
