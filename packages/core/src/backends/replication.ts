import { checkMs, refuseUnknown } from '../engine/options.js';
import { InvalidOptionError } from '../errors.js';
import type { RedisClient } from '../protocol.js';
import { isCluster } from '../topology.js';
import type { ReplicationOptions } from '../types.js';

const AUTO = { replicas: 1, timeout: 250 };
const AUTO_RECHECK_MS = 10_000;

/** The WAIT to send behind an acquisition: how many replicas must confirm it, within how many ms. */
export interface WaitPlan {
  readonly replicas: number;
  readonly timeout: number;
}

/** What to WAIT for behind acquisitions, decided by the `replication` option. */
export interface ReplicationGate {
  /**
   * What to WAIT for after the next acquisition, or null for nothing: answered at once, except
   * that `'auto'` asks the server for its replicas (`INFO replication`) at most every 10 s, and
   * again after a connection of the client closed, before the acquisition, so a failure there
   * writes nothing.
   */
  plan(): WaitPlan | null | Promise<WaitPlan | null>;
  /**
   * After a WAIT that fewer replicas confirmed than planned: whether the acquisition still needed
   * them. Under `'auto'` the server is asked again at once, since its replicas may be gone (a
   * failover to a master that has none): a master without replicas has nothing to wait for. An
   * explicit `{ replicas }` always needs them.
   */
  stillNeeded(): Promise<boolean>;
  /**
   * How much longer than its round trips the next acquisition may take: WAIT's timeout when it
   * may send one. Under `'auto'`, only once the server was seen with replicas: a server seen
   * without them (or not seen yet: the attempt that first asks has time for a prompt WAIT) adds
   * nothing to the deadline of a call made while it is down.
   */
  allowance(): number;
}

/**
 * @param closes how many connections of the client closed so far: after a reconnect `'auto'`
 *   asks again, as the client may have reached another master (a failover), with other
 *   replicas. Its WAITs, sent for replicas that are gone, would each hold the connection for
 *   their timeout, and every command queued behind them, concurrent acquisitions included.
 *   Default: none ever.
 */
export function replicationGate(
  redis: RedisClient,
  replication: ReplicationOptions,
  closes: () => number = () => 0,
): ReplicationGate {
  checkReplication(replication, isCluster(redis));
  if (replication === false || isCluster(redis)) {
    return { plan: () => null, stillNeeded: async () => true, allowance: () => 0 };
  }
  if (replication !== 'auto') {
    const plan = { replicas: replication.replicas, timeout: replication.timeout };
    return { plan: () => plan, stillNeeded: async () => true, allowance: () => plan.timeout };
  }
  let checkedAt = Number.NEGATIVE_INFINITY;
  let checkedClosed = 0;
  let plan: WaitPlan | null = null;
  const check = () => {
    // Read before the question: a connection that closes meanwhile may have answered for another server.
    const closed = closes();
    return connectedReplicas(redis).then((replicas) => {
      plan = replicas > 0 ? AUTO : null;
      checkedAt = performance.now();
      checkedClosed = closed;
      return plan;
    });
  };
  const fresh = () => performance.now() - checkedAt <= AUTO_RECHECK_MS && closes() === checkedClosed;
  return {
    plan: () => (fresh() ? plan : check()),
    stillNeeded: async () => (await check()) !== null,
    allowance: () => plan?.timeout ?? 0,
  };
}

/** Sends `WAIT` on the caller's connection: it covers the writes sent before it there. Answers how many replicas confirmed. */
export async function sendWait(redis: RedisClient, plan: WaitPlan): Promise<number> {
  return Number(await redis.call('WAIT', plan.replicas, plan.timeout));
}

/** Refuses a `replication` option that is not `'auto'`, `false` or `{ replicas, timeout }` (only the first two on a cluster), naming the bad value. */
export function checkReplication(value: unknown, cluster: boolean): asserts value is ReplicationOptions {
  if (value === 'auto' || value === false) return;
  if (typeof value !== 'object' || value === null) {
    throw new InvalidOptionError('replication', value, "'auto', false or { replicas, timeout }");
  }
  if (cluster) {
    throw new InvalidOptionError(
      'replication',
      value,
      "'auto' or false on a cluster (WAIT gating is per node)",
    );
  }
  refuseUnknown(value, ['replicas', 'timeout'], 'the replication options', {}, 'replication');
  const { replicas, timeout } = value as { replicas?: unknown; timeout?: unknown };
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1) {
    throw new InvalidOptionError('replication.replicas', replicas, 'a positive integer');
  }
  checkMs(timeout, 'replication.timeout');
}

async function connectedReplicas(redis: RedisClient): Promise<number> {
  const info = String(await redis.call('INFO', 'replication'));
  const match = /connected_slaves:(\d+)/.exec(info);
  return match ? Number(match[1]) : 0;
}
