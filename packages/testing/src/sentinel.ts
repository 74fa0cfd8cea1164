import { Redis, type RedisOptions } from 'ioredis';
import { adminClient } from './admin.js';
import { OwnedClients } from './clients.js';
import { nodeOptions, startServers, stopAfter, stopGroups } from './group.js';
import { info } from './info.js';
import { type Address, type RedisServer, type RedisServerOptions, startRedis } from './server.js';
import { checkInteger } from './validate.js';
import { waitFor } from './wait.js';

/** Options of `startSentinel`. */
export interface StartSentinelOptions {
  /** Replicas of the master. Default: `2`. */
  replicas?: number;
  /** Sentinel processes watching the master. Default: `3`. */
  sentinels?: number;
  /** The name the sentinels monitor the master under. Default: `'mymaster'`. */
  masterName?: string;
  /** Sentinels that must agree the master is down. Default: a majority of `sentinels`. */
  quorum?: number;
  /** `sentinel down-after-milliseconds`: silence before a node is considered down. Default: `1000`. */
  downAfterMilliseconds?: number;
  /** `sentinel failover-timeout`. Default: `10_000`. */
  failoverTimeout?: number;
  /** Options of the master and replica processes. Default: none. */
  server?: RedisServerOptions;
  /**
   * Options of one data server's process, by its index in `nodes` (`0` the master, `1..` the
   * replicas), over `server` (`config` and `env` merged key by key): e.g. a `SkewClock`'s `env`
   * for the replica a failover will promote. A replica's `replicaof` is added. Default: none.
   */
  node?: (index: number) => RedisServerOptions | undefined;
  /** Milliseconds to wait for replication and sentinels to settle, at start, in `failover()` and in `switchedFrom()`. Default: `30_000`. */
  timeout?: number;
}

/** A master with replicas, watched by sentinels. */
export interface RedisSentinel {
  readonly masterName: string;
  /** The data servers: the first master, then its replicas. Roles change with failovers. */
  readonly nodes: readonly RedisServer[];
  /** The sentinel processes. */
  readonly sentinels: readonly RedisServer[];
  readonly sentinelAddresses: readonly Address[];
  /** ioredis options for a sentinel-backed client: `{ sentinels, name }`. */
  readonly redisOptions: RedisOptions;
  /** A new sentinel-backed ioredis client; `stop()` disconnects it. */
  client(options?: RedisOptions): Redis;
  /**
   * The data server the sentinels currently name as master: the first running sentinel that is
   * not paused and answers tells.
   */
  master(): Promise<RedisServer>;
  /**
   * Forces a failover (`SENTINEL FAILOVER`) and resolves with the new master once every running
   * sentinel that is not paused names it and it answers as master. The old master is turned into
   * a replica by the sentinels some seconds later. One failover only: one already running (the
   * test's own, or after a request whose reply was lost) is waited for, not followed by another.
   */
  failover(): Promise<RedisServer>;
  /**
   * Resolves with the new master once every running sentinel that is not paused has switched
   * away from `old` to one same master: its own record names it, with no failover in progress.
   * Each has then published its `+switch-master`, on which ioredis's `failoverDetector` drops the
   * client's connections and connects again (once per message that reaches a connection).
   * `master()` names a promoted replica earlier, while the sentinel leading the failover still
   * reconfigures the others, and a failover that does not complete may be followed by one that
   * promotes another replica. Waits up to the setup's `timeout`.
   */
  switchedFrom(old: RedisServer): Promise<RedisServer>;
  /** Stops sentinels, then data servers. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a master, its replicas and sentinels, and returns once replication is up and the sentinels agree. */
export async function startSentinel(options: StartSentinelOptions = {}): Promise<RedisSentinel> {
  const {
    replicas = 2,
    sentinels: sentinelCount = 3,
    masterName = 'mymaster',
    downAfterMilliseconds = 1000,
    failoverTimeout = 10_000,
    timeout = 30_000,
  } = options;
  const quorum = options.quorum ?? Math.floor(sentinelCount / 2) + 1;
  checkInteger('replicas', replicas, 1);
  checkInteger('sentinels', sentinelCount, 1);
  checkInteger('quorum', quorum, 1);
  if (quorum > sentinelCount)
    throw new RangeError(`quorum must be <= sentinels (${sentinelCount}), got ${quorum}`);
  checkInteger('downAfterMilliseconds', downAfterMilliseconds, 1);
  checkInteger('failoverTimeout', failoverTimeout, 1);
  checkInteger('timeout', timeout, 1);
  if (!/^[\w.-]+$/.test(masterName)) throw new RangeError(`masterName must be a word, got '${masterName}'`);
  // Every data server's options before any starts: a `node` callback that throws starts nothing.
  const [masterOptions, ...replicaOptions] = Array.from({ length: replicas + 1 }, (_, index) =>
    nodeOptions(options.server, options.node?.(index)),
  );
  const started: RedisServer[] = [];
  try {
    const master = await startRedis(masterOptions);
    started.push(master);
    started.push(
      ...(await startServers(replicas, (index) => {
        const own = replicaOptions[index]!;
        return { ...own, config: { ...own.config, replicaof: `${master.host} ${master.port}` } };
      })),
    );
    const nodes = [...started];
    await Promise.all(nodes.slice(1).map((replica) => waitForLink(replica, master, timeout)));
    const sentinels = await startServers(sentinelCount, {
      sentinel: true,
      config: {
        'sentinel monitor': `${masterName} ${master.host} ${master.port} ${quorum}`,
        'sentinel down-after-milliseconds': `${masterName} ${downAfterMilliseconds}`,
        'sentinel failover-timeout': `${masterName} ${failoverTimeout}`,
      },
    });
    started.push(...sentinels);
    const setup = new SentinelSetup(masterName, nodes, sentinels, timeout);
    await setup.settled(master);
    return setup;
  } catch (error) {
    return stopAfter(error, started);
  }
}

class SentinelSetup implements RedisSentinel {
  readonly sentinelAddresses: readonly Address[];
  private readonly clients = new OwnedClients();

  constructor(
    readonly masterName: string,
    readonly nodes: readonly RedisServer[],
    readonly sentinels: readonly RedisServer[],
    private readonly timeout: number,
  ) {
    this.sentinelAddresses = sentinels.map(({ host, port }) => ({ host, port }));
  }

  get redisOptions(): RedisOptions {
    return { sentinels: this.sentinelAddresses.map((address) => ({ ...address })), name: this.masterName };
  }

  client(options: RedisOptions = {}): Redis {
    return this.clients.add(new Redis({ ...this.redisOptions, ...options }));
  }

  async master(): Promise<RedisServer> {
    let failure: unknown;
    // One sentinel may be hung or dying in a way this library did not cause; the next one knows too.
    for (const sentinel of this.liveSentinels()) {
      try {
        const port = await this.masterPort(sentinel);
        const master = this.nodes.find((node) => node.port === port);
        if (!master) throw new Error(`sentinels name an unknown master on port ${port}`);
        return master;
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }

  async failover(): Promise<RedisServer> {
    let old: RedisServer | undefined;
    // Sentinels just restarted or resumed may none of them answer yet; like every later step,
    // this one waits for them instead of failing the test.
    await waitFor(
      `the sentinels of ${this.masterName} to name its master`,
      async () => {
        old = await this.master();
        return true;
      },
      { timeout: this.timeout },
    );
    // Right after a start or a failover the sentinels may not yet rate any replica as good.
    await waitFor(`SENTINEL FAILOVER ${this.masterName} to be accepted`, () => this.requestFailover(old!), {
      timeout: this.timeout,
      interval: 250,
    });
    let promoted: RedisServer | undefined;
    await waitFor(
      `the sentinels to name a new master instead of port ${old!.port}`,
      async () => {
        const candidate = await this.master();
        if (candidate === old || !(await this.agree(candidate))) return false;
        promoted = candidate;
        return (await info(adminClient(candidate), 'replication')).role === 'master';
      },
      { timeout: this.timeout },
    );
    return promoted!;
  }

  /**
   * Asks a sentinel for a failover away from `old`; true once one was accepted or has already
   * moved the master. A request whose reply was lost (a timeout, a dropped connection) may have
   * started one, and one may be running already (the answer is then INPROG, retried): asked
   * again once it is over, the sentinel would start a second failover and move the master
   * again after `failover()` returned. So the request is only repeated while `old` is still
   * the master.
   */
  private async requestFailover(old: RedisServer): Promise<boolean> {
    const sentinel = this.liveSentinels()[0]!;
    if ((await this.masterPort(sentinel)) !== old.port) return true;
    // Its own connection, never reconnected: ioredis would send the command again on reconnect.
    const once = sentinel.client({
      commandTimeout: 2_000,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: () => null,
    });
    try {
      return (await once.call('SENTINEL', 'FAILOVER', this.masterName)) === 'OK';
    } finally {
      once.disconnect();
    }
  }

  async switchedFrom(old: RedisServer): Promise<RedisServer> {
    let master: RedisServer | undefined;
    await waitFor(
      `every sentinel to switch away from master port ${old.port}`,
      async () => {
        const records = await Promise.all(
          this.liveSentinels().map((sentinel) => masterRecord(adminClient(sentinel), this.masterName)),
        );
        const ports = new Set(records.map((record) => Number(record.port)));
        if (ports.size > 1 || ports.has(old.port)) return false;
        if (records.some((record) => /failover/.test(record.flags ?? ''))) return false;
        master = this.nodes.find((node) => ports.has(node.port));
        if (!master) throw new Error(`sentinels name an unknown master on port ${[...ports][0]}`);
        return true;
      },
      { timeout: this.timeout, interval: 100 },
    );
    return master!;
  }

  /** Waits until every sentinel names `master`, sees every replica and every other sentinel. */
  async settled(master: RedisServer): Promise<void> {
    await waitFor(
      `the sentinels to agree on master port ${master.port}`,
      async () => {
        for (const sentinel of this.sentinels) {
          const admin = adminClient(sentinel);
          if ((await this.masterPort(sentinel)) !== master.port) return false;
          const replicas = await sentinelList(admin, 'REPLICAS', this.masterName);
          const peers = await sentinelList(admin, 'SENTINELS', this.masterName);
          const healthy = replicas.filter((replica) => !/down|disconnected/.test(replica.flags ?? ''));
          if (healthy.length < this.nodes.length - 1 || peers.length < this.sentinels.length - 1)
            return false;
        }
        return true;
      },
      { timeout: this.timeout, interval: 100 },
    );
  }

  async stop(): Promise<void> {
    this.clients.disconnectAll();
    await stopGroups([this.sentinels, this.nodes]);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private async agree(master: RedisServer): Promise<boolean> {
    const ports = await Promise.all(this.liveSentinels().map((sentinel) => this.masterPort(sentinel)));
    return ports.every((port) => port === master.port);
  }

  /**
   * Tests kill and pause sentinels on purpose; the ones still running and not paused are the
   * ones to ask (a paused one would only time out).
   */
  private liveSentinels(): RedisServer[] {
    const live = this.sentinels.filter((sentinel) => sentinel.running && !sentinel.paused);
    if (live.length === 0) throw new Error(`no sentinel of ${this.masterName} is running and not paused`);
    return live;
  }

  private async masterPort(sentinel: RedisServer): Promise<number> {
    const address = (await adminClient(sentinel).call(
      'SENTINEL',
      'GET-MASTER-ADDR-BY-NAME',
      this.masterName,
    )) as [string, string] | null;
    if (!address) throw new Error(`sentinel on port ${sentinel.port} does not know ${this.masterName}`);
    return Number(address[1]);
  }
}

async function waitForLink(replica: RedisServer, master: RedisServer, timeout: number): Promise<void> {
  await waitFor(
    `replica on port ${replica.port} to sync with master port ${master.port}`,
    async () => (await info(adminClient(replica), 'replication')).master_link_status === 'up',
    { timeout },
  );
}

/** `SENTINEL REPLICAS|SENTINELS <name>` as records. */
async function sentinelList(
  admin: Redis,
  what: string,
  masterName: string,
): Promise<Record<string, string>[]> {
  const rows = (await admin.call('SENTINEL', what, masterName)) as string[][];
  return rows.map(fieldsOf);
}

/** A sentinel's own record of the master it monitors as `masterName` (`SENTINEL MASTER`). */
async function masterRecord(admin: Redis, masterName: string): Promise<Record<string, string>> {
  return fieldsOf((await admin.call('SENTINEL', 'MASTER', masterName)) as string[]);
}

/** A sentinel's flat [field, value, …] reply as a record. */
function fieldsOf(row: readonly string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < row.length; i += 2) record[row[i]!] = row[i + 1]!;
  return record;
}
