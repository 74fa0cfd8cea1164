import { InvalidOptionError } from '../errors.js';
import type { RedisClient } from '../protocol.js';
import { isCluster } from '../topology.js';
import type { ReplicationOptions } from '../types.js';

const AUTO = { replicas: 1, timeout: 250 };
const AUTO_RECHECK_MS = 10_000;

/** How many replicas an acquisition wanted and how many confirmed it. */
export interface ReplicaCount {
  readonly wanted: number;
  readonly confirmed: number;
}

/**
 * A function sending `WAIT` on the caller's connection (the one that ran the acquire script,
 * so WAIT covers that write) and answering how many replicas confirmed.
 */
export function replicationGate(
  redis: RedisClient,
  replication: ReplicationOptions,
): () => Promise<ReplicaCount> {
  const none = async () => ({ wanted: 0, confirmed: 0 });
  if (replication === false) return none;
  if (isCluster(redis)) {
    if (replication === 'auto') return none;
    throw new InvalidOptionError(
      'replication',
      replication,
      "'auto' or false on a cluster (WAIT gating is per node)",
    );
  }
  if (replication !== 'auto') {
    checkReplication(replication);
    return async () => ({
      wanted: replication.replicas,
      confirmed: await wait(redis, replication.replicas, replication.timeout),
    });
  }
  let checkedAt = Number.NEGATIVE_INFINITY;
  let replicated = false;
  return async () => {
    if (performance.now() - checkedAt > AUTO_RECHECK_MS) {
      replicated = (await connectedReplicas(redis)) > 0;
      checkedAt = performance.now();
    }
    if (!replicated) return { wanted: 0, confirmed: 0 };
    return { wanted: AUTO.replicas, confirmed: await wait(redis, AUTO.replicas, AUTO.timeout) };
  };
}

function checkReplication(value: { replicas: unknown; timeout: unknown }): void {
  if (typeof value !== 'object' || value === null) {
    throw new InvalidOptionError('replication', value, "'auto', false or { replicas, timeout }");
  }
  const { replicas, timeout } = value;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 1) {
    throw new InvalidOptionError('replication.replicas', replicas, 'a positive integer');
  }
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1) {
    throw new InvalidOptionError('replication.timeout', timeout, 'a positive integer number of ms');
  }
}

async function wait(redis: RedisClient, replicas: number, timeout: number): Promise<number> {
  return Number(await redis.call('WAIT', replicas, timeout));
}

async function connectedReplicas(redis: RedisClient): Promise<number> {
  const info = String(await redis.call('INFO', 'replication'));
  const match = /connected_slaves:(\d+)/.exec(info);
  return match ? Number(match[1]) : 0;
}
