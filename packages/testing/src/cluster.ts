import { Cluster, type ClusterOptions } from 'ioredis';
import { adminClient } from './admin.js';
import { OwnedClients } from './clients.js';
import { nodeOptions, startServers, stopAfter, stopServers } from './group.js';
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
  /**
   * Options of one node's process, by its index in `nodes` (masters first), over `server`
   * (`config` and `env` merged key by key): e.g. a `SkewClock`'s `env` for one master only.
   * Default: none.
   */
  node?: (index: number) => RedisServerOptions | undefined;
  /**
   * Milliseconds to wait for the cluster to be formed and `cluster_state:ok` everywhere, and for
   * each step of `failover()`. Default: `30_000`.
   */
  timeout?: number;
}

/** The shard `failover()` moves: the one whose master serves `key`'s slot, or `slot`, now. */
export type ClusterShard = { key: string; slot?: never } | { slot: number; key?: never };

/** Options of `RedisCluster.failover`. */
export interface ClusterFailoverOptions {
  /**
   * The `CLUSTER FAILOVER` variant. Default: none, a coordinated failover: the master holds
   * writes until the replica has caught up, so no write it acknowledged is lost; the master must
   * answer. `'FORCE'`: no handshake with the master (one that is down or paused); the masters
   * still vote. `'TAKEOVER'`: no vote either; the replica takes a new config epoch on its own.
   */
  mode?: 'FORCE' | 'TAKEOVER';
  /** Milliseconds for each step: agreement on the shard, the promotion, the convergence. Default: the cluster's `timeout`. */
  timeout?: number;
}

/** What `failover()` did. */
export interface ClusterFailover {
  /** The slot ranges of the shard, `[start, end]` in order: all moved together. */
  slots: readonly (readonly [number, number])[];
  /** The replica that is now the shard's master. */
  promoted: RedisServer;
  /** The shard's master before: now a replica of `promoted` (once running again, if it was down). */
  demoted: RedisServer;
}

/** Options of `RedisCluster.migrateSlot`. */
export interface MigrateSlotOptions {
  /** The master the slot moves to. Default: the first other master, in `masters` order, that is running and not paused. */
  to?: RedisServer;
  /** Milliseconds for each step: agreeing on the slot's master, moving keys, the convergence. Default: the cluster's `timeout`. */
  timeout?: number;
}

/**
 * A slot on its way to another master, as `redis-cli --cluster reshard` moves it: marked
 * IMPORTING on `to` and MIGRATING on `from`. Meanwhile `from` answers a command whose keys are
 * all still there, sends one whose keys are all gone on with `ASK`, and answers one whose keys
 * are split between the two `TRYAGAIN`.
 */
export interface SlotMigration {
  readonly slot: number;
  readonly from: RedisServer;
  readonly to: RedisServer;
  /**
   * Moves keys of the slot still on `from` to `to` (`MIGRATE`): those named, or up to a count of
   * them in `CLUSTER GETKEYSINSLOT` order; resolves with the keys moved. Default: all of them.
   */
  moveKeys(which?: number | readonly string[]): Promise<string[]>;
  /** Moves the keys left, gives the slot to `to` on every master (`CLUSTER SETSLOT … NODE`), and resolves once every running node names `to` its master. */
  finish(): Promise<void>;
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
  /**
   * Promotes a replica of the shard's current master with `CLUSTER FAILOVER` (the first
   * replica, in `nodes` order, that is running and not paused). Resolves once the replica reports
   * `role:master`, and every node that is running and not paused sees it as the master of all
   * the shard's slots, sees the old master and the shard's other replicas following it, and
   * those of them running and not paused report it as their master, link up. `masters`,
   * `replicas` and `slotRanges` keep describing the cluster at start.
   */
  failover(shard: ClusterShard, options?: ClusterFailoverOptions): Promise<ClusterFailover>;
  /**
   * Starts moving the slot of `shard` from its master to another (`to`): resolves once the slot
   * is marked on both, with no key moved yet; the test moves them and finishes (see `SlotMigration`).
   */
  migrateSlot(shard: ClusterShard, options?: MigrateSlotOptions): Promise<SlotMigration>;
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
  const nodes = await startServers(masterCount * (1 + replicasPerMaster), (index) => {
    const own = nodeOptions(options.server, options.node?.(index));
    return {
      ...own,
      config: {
        ...own.config,
        'cluster-enabled': 'yes',
        'cluster-config-file': 'nodes.conf',
        'cluster-node-timeout': nodeTimeout,
        // A node learns its own address from peers' MEETs; a lone master would have none to report.
        'cluster-announce-ip': '127.0.0.1',
      },
    };
  });
  try {
    const masters = nodes.slice(0, masterCount);
    const slotRanges = masters.map((master, i) => ({
      start: Math.floor((i * slotCount) / masterCount),
      end: Math.floor(((i + 1) * slotCount) / masterCount) - 1,
      master,
    }));
    await form(nodes, slotRanges, replicasPerMaster, timeout);
    return new ClusterSetup(masters, nodes.slice(masterCount), nodes, slotRanges, timeout);
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
        const withSlots = view.filter((entry) => entry.role === 'master' && entry.slots.length > 0);
        const following = view.filter((entry) => entry.role === 'slave');
        if (withSlots.length !== slotRanges.length || following.length !== replicas.length) return false;
      }
      const links = await Promise.all(replicas.map((replica) => info(adminClient(replica), 'replication')));
      return links.every((link) => link.master_link_status === 'up');
    },
    { timeout },
  );
}

/** One line of a node's `CLUSTER NODES`. */
interface NodeEntry {
  id: string;
  port: number;
  role: 'master' | 'slave' | 'other';
  /** The id of the master it replicates, if it is a replica. */
  masterId: string | undefined;
  /** Known, reachable and not in handshake or failure. */
  connected: boolean;
  /** The slot ranges it serves, without slots being migrated or imported. */
  slots: [number, number][];
}

/** One node's view of the cluster: its `CLUSTER NODES`. */
async function clusterView(node: RedisServer): Promise<NodeEntry[]> {
  const text = (await adminClient(node).call('CLUSTER', 'NODES')) as string;
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', address = '', flagText = '', master = '', , , , link = '', ...slots] = line.split(' ');
      const flags = flagText.split(',');
      const healthy = !flags.some((flag) => ['handshake', 'noaddr', 'fail', 'fail?'].includes(flag));
      const at = address.indexOf('@');
      return {
        id,
        port: Number(address.slice(address.lastIndexOf(':', at) + 1, at)),
        role: flags.includes('master') ? 'master' : flags.includes('slave') ? 'slave' : 'other',
        masterId: master === '-' ? undefined : master,
        connected: healthy && (flags.includes('myself') || link === 'connected'),
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [start, end = start] = range.split('-').map(Number) as [number, number?];
            return [start, end];
          }),
      };
    });
}

/** How long a replica pursues a manual failover before dropping it: `CLUSTER_MF_TIMEOUT` of Redis. */
const manualFailoverTimeout = 5_000;

/** The shard of one slot as every live node sees it. */
interface ShardView {
  slot: number;
  master: RedisServer;
  replicas: RedisServer[];
  slots: [number, number][];
}

class ClusterSetup implements RedisCluster {
  readonly startupNodes: readonly Address[];
  private readonly clients = new OwnedClients();

  constructor(
    readonly masters: readonly RedisServer[],
    readonly replicas: readonly RedisServer[],
    readonly nodes: readonly RedisServer[],
    readonly slotRanges: readonly SlotRange[],
    private readonly timeout: number,
  ) {
    this.startupNodes = nodes.map(({ host, port }) => ({ host, port }));
  }

  client(options: ClusterOptions = {}): Cluster {
    const startupNodes = this.startupNodes.map((address) => ({ ...address }));
    return this.clients.add(new Cluster(startupNodes, options));
  }

  async failover(shard: ClusterShard, options: ClusterFailoverOptions = {}): Promise<ClusterFailover> {
    const { mode, timeout = this.timeout } = options;
    checkShard(shard, 'failover');
    if (mode !== undefined && mode !== 'FORCE' && mode !== 'TAKEOVER')
      throw new RangeError(`mode must be 'FORCE' or 'TAKEOVER', got ${String(mode)}`);
    checkInteger('timeout', timeout, 1);
    const { slot, master, replicas, slots } = await this.agreedShard(shard, timeout);
    const promoted = replicas.find(isLive);
    if (!promoted)
      throw new Error(`the master of slot ${slot} (port ${master.port}) has no running replica to promote`);
    let requested = Number.NEGATIVE_INFINITY;
    await waitFor(
      `replica port ${promoted.port} to take slot ${slot} over from port ${master.port} (CLUSTER FAILOVER${mode ? ` ${mode}` : ''})`,
      async () => {
        if ((await info(adminClient(promoted), 'replication')).role === 'master') return true;
        // A replica drops a manual failover it could not complete (the master did not answer, a
        // vote was lost): asked again, it starts over. A replica already promoted refuses, so a
        // request whose reply was lost cannot move the shard twice.
        if (performance.now() - requested >= manualFailoverTimeout) {
          await adminClient(promoted).call('CLUSTER', 'FAILOVER', ...(mode ? [mode] : []));
          requested = performance.now();
        }
        return false;
      },
      { timeout, interval: 100 },
    );
    const followers = [master, ...replicas.filter((replica) => replica !== promoted)];
    await waitFor(
      `the cluster to converge on port ${promoted.port} as master of ${describeSlots(slots)}, followed by ports ${followers.map(({ port }) => port).join(', ')}`,
      () => this.converged(promoted, followers, slots),
      { timeout, interval: 100 },
    );
    return { slots, promoted, demoted: master };
  }

  async migrateSlot(shard: ClusterShard, options: MigrateSlotOptions = {}): Promise<SlotMigration> {
    const { timeout = this.timeout } = options;
    checkShard(shard, 'migrateSlot');
    checkInteger('timeout', timeout, 1);
    const { slot, master: from } = await this.agreedShard(shard, timeout);
    const to = options.to ?? this.masters.find((master) => master !== from && isLive(master));
    if (!to || to === from || !this.masters.includes(to))
      throw new RangeError(
        `to must be another master of this cluster than port ${from.port}, got ${to ? `port ${to.port}` : 'none running'}`,
      );
    const source = adminClient(from);
    const target = adminClient(to);
    const [fromId, toId] = await Promise.all([
      source.call('CLUSTER', 'MYID'),
      target.call('CLUSTER', 'MYID'),
    ]);
    // Importing first: a key MIGRATE moves must find the slot open on the target.
    await target.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId as string);
    await source.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId as string);
    const migrate = (keys: readonly string[]) =>
      source.call('MIGRATE', to.host, String(to.port), '', '0', String(timeout), 'KEYS', ...keys);
    const moveKeys = async (
      which: number | readonly string[] = Number.POSITIVE_INFINITY,
    ): Promise<string[]> => {
      if (typeof which !== 'number') {
        if (which.length > 0) await migrate(which);
        return [...which];
      }
      if (which !== Number.POSITIVE_INFINITY) checkInteger('count', which, 0);
      const moved: string[] = [];
      while (moved.length < which) {
        const batch = Math.min(100, which - moved.length);
        const keys = (await source.call('CLUSTER', 'GETKEYSINSLOT', String(slot), String(batch))) as string[];
        if (keys.length === 0) break;
        await migrate(keys);
        moved.push(...keys);
      }
      return moved;
    };
    const finish = async (): Promise<void> => {
      await moveKeys();
      // The target first, as redis-cli does: it must own the slot before the source stops sending ASK.
      const masters = [
        to,
        from,
        ...this.masters.filter((master) => master !== to && master !== from && isLive(master)),
      ];
      for (const master of masters)
        await adminClient(master).call('CLUSTER', 'SETSLOT', String(slot), 'NODE', toId as string);
      await waitFor(
        `every running node to name port ${to.port} the master of slot ${slot}`,
        async () => {
          const { master } = await this.shardView(slot);
          if (master !== to) throw new Error(`the nodes name port ${master.port} the master of slot ${slot}`);
          return true;
        },
        { timeout, interval: 50 },
      );
    };
    return { slot, from, to, moveKeys, finish };
  }

  async stop(): Promise<void> {
    this.clients.disconnectAll();
    await stopServers(this.nodes);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** The shard of `shard` once the running nodes agree on its master, within `timeout` ms. */
  private async agreedShard(shard: ClusterShard, timeout: number): Promise<ShardView> {
    let agreed: ShardView | undefined;
    await waitFor(
      `the running cluster nodes to agree on the master of ${describeShard(shard)}`,
      async () => {
        agreed = await this.shardView(shard.slot ?? (await this.keySlot(shard.key!)));
        return true;
      },
      { timeout },
    );
    return agreed!;
  }

  private async keySlot(key: string): Promise<number> {
    return (await adminClient(this.liveNodes()[0]!).call('CLUSTER', 'KEYSLOT', key)) as number;
  }

  /** The shard of `slot`; throws, naming them, while the live nodes disagree on its master. */
  private async shardView(slot: number): Promise<ShardView> {
    let agreed: (ShardView & { by: RedisServer }) | undefined;
    for (const node of this.liveNodes()) {
      const view = await clusterView(node);
      const owner = view.find(
        (entry) =>
          entry.role === 'master' && entry.slots.some(([start, end]) => slot >= start && slot <= end),
      );
      if (!owner) throw new Error(`port ${node.port} knows no master of slot ${slot}`);
      const master = this.serverAt(owner.port);
      if (agreed && agreed.master !== master)
        throw new Error(
          `port ${node.port} names port ${master.port} as master of slot ${slot}, port ${agreed.by.port} names port ${agreed.master.port}`,
        );
      const replicaPorts = new Set(
        view.filter((entry) => entry.masterId === owner.id && entry.connected).map(({ port }) => port),
      );
      agreed = {
        by: node,
        slot,
        master,
        // Every view must see the replica healthy: the vote and the handshake go through them all.
        replicas: (agreed?.replicas ?? this.nodes).filter((server) => replicaPorts.has(server.port)),
        slots: owner.slots,
      };
    }
    return agreed!;
  }

  /** Resolves true once the failover is visible everywhere; otherwise throws what is not yet. */
  private async converged(
    promoted: RedisServer,
    followers: RedisServer[],
    slots: [number, number][],
  ): Promise<boolean> {
    const wanted = describeSlots(slots);
    // A node that cannot answer can neither see nor announce the change; it learns it when back.
    const live = followers.filter(isLive);
    for (const node of this.liveNodes()) {
      const view = await clusterView(node);
      const master = view.find((entry) => entry.port === promoted.port);
      if (master?.role !== 'master' || describeSlots(master.slots) !== wanted)
        throw new Error(
          `port ${node.port} sees port ${promoted.port} as ${master?.role ?? 'unknown'} of ${describeSlots(master?.slots ?? [])}`,
        );
      for (const follower of live) {
        const entry = view.find(({ port }) => port === follower.port);
        if (entry?.masterId !== master.id)
          throw new Error(
            `port ${node.port} does not see port ${follower.port} following port ${promoted.port}`,
          );
      }
    }
    for (const follower of live) {
      const replication = await info(adminClient(follower), 'replication');
      if (
        replication.role !== 'slave' ||
        replication.master_port !== String(promoted.port) ||
        replication.master_link_status !== 'up'
      )
        throw new Error(
          `port ${follower.port} reports role:${replication.role}, master_port:${replication.master_port}, master_link_status:${replication.master_link_status}`,
        );
    }
    return true;
  }

  /** The nodes that can answer: tests kill and pause nodes on purpose. */
  private liveNodes(): RedisServer[] {
    const live = this.nodes.filter(isLive);
    if (live.length === 0) throw new Error('no cluster node is running and not paused');
    return live;
  }

  private serverAt(port: number): RedisServer {
    const server = this.nodes.find((node) => node.port === port);
    if (!server) throw new Error(`the cluster names port ${port}, a node this cluster did not start`);
    return server;
  }
}

function isLive(server: RedisServer): boolean {
  return server.running && !server.paused;
}

/** Refuses a shard that is not exactly one of `{ key }` (a string) and `{ slot }` (0..16383). */
function checkShard(shard: ClusterShard, method: 'failover' | 'migrateSlot'): void {
  const { key, slot } = (shard ?? {}) as { key?: unknown; slot?: unknown };
  if ((key === undefined) === (slot === undefined))
    throw new RangeError(`${method}() takes { key } or { slot }, got ${JSON.stringify(shard)}`);
  if (key !== undefined && typeof key !== 'string')
    throw new RangeError(`key must be a string, got ${String(key)}`);
  if (
    slot !== undefined &&
    !(Number.isInteger(slot) && (slot as number) >= 0 && (slot as number) < slotCount)
  )
    throw new RangeError(`slot must be an integer in 0..${slotCount - 1}, got ${String(slot)}`);
}

function describeShard(shard: ClusterShard): string {
  return shard.slot === undefined ? `the slot of key '${shard.key}'` : `slot ${shard.slot}`;
}

function describeSlots(slots: readonly (readonly [number, number])[]): string {
  if (slots.length === 0) return 'no slots';
  return `slots ${slots.map(([start, end]) => (start === end ? `${start}` : `${start}-${end}`)).join(',')}`;
}
