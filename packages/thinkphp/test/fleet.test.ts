import { setTimeout as sleep } from 'node:timers/promises';
import { type RedisServer, startRedis } from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { php, phpAvailable } from './php.js';

// A fleet of contenders on one key. Each holder adds itself to a witness set on entry and
// reads it: anyone else in the set means two holders believed they held the lock at once.

const SEED = 20_261_122;
const RUN_MS = 3_000;
const EXPIRE = 1;

interface FleetReport {
  /** Holds per worker kind. */
  acquired: { php: number; node: number };
  /** [entering holder, holder already inside], e.g. ['node:5', 'php:1']. */
  overlaps: [string, string][];
}

let server: RedisServer;

/** A small deterministic PRNG (mulberry32) so both fleet runs draw the same work times. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Connects and warms up a Node worker, so that it is in the race as soon as it is run. */
async function nodeWorker(
  key: string,
  witness: string,
  id: number,
): Promise<(onHold: () => void) => Promise<FleetReport>> {
  const redis = server.client();
  const next = random(SEED + id);
  const between = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const me = `node:${id}`;
  // Poll about as often as the PHP workers do, so both kinds get the lock.
  const lock = new Lock(key, { redis, expire: EXPIRE, sleep: 0.02 });
  // Warm the connection and locker up first, so Node is in the race from the start.
  const warmUp = new Lock(`${key}:warm-up:${id}`, { redis, expire: EXPIRE });
  await warmUp.lock();
  await warmUp.unlock();
  return (onHold) => runNodeWorker(redis, lock, witness, me, between, onHold);
}

async function runNodeWorker(
  redis: Redis,
  lock: Lock,
  witness: string,
  me: string,
  between: (min: number, max: number) => number,
  onHold: () => void,
): Promise<FleetReport> {
  const report: FleetReport = { acquired: { php: 0, node: 0 }, overlaps: [] };
  const deadline = performance.now() + RUN_MS;
  while (performance.now() < deadline) {
    if (await lock.lock()) {
      report.acquired.node += 1;
      onHold();
      const [, members] = (await redis.multi().sadd(witness, me).smembers(witness).exec()) as [
        unknown,
        [null, string[]],
      ];
      for (const other of members[1]) if (other !== me) report.overlaps.push([me, other]);
      await sleep(between(5, 30));
      await redis.srem(witness, me);
      await lock.unlock();
    } else {
      await sleep(between(10, 30));
    }
  }
  redis.disconnect();
  return report;
}

async function phpWorker(key: string, witness: string, id: number): Promise<FleetReport> {
  const report = await php<{ acquired: number; overlaps: [string, string][] }>('worker', {
    port: server.port,
    key,
    expire: EXPIRE,
    witness,
    id,
    seed: SEED + id,
    ms: RUN_MS,
  });
  return { acquired: { php: report.acquired, node: 0 }, overlaps: report.overlaps };
}

function merge(reports: FleetReport[]): FleetReport {
  return {
    acquired: {
      php: reports.reduce((sum, r) => sum + r.acquired.php, 0),
      node: reports.reduce((sum, r) => sum + r.acquired.node, 0),
    },
    overlaps: reports.flatMap((r) => r.overlaps),
  };
}

describe.runIf(phpAvailable)('mixed fleet of PHP and Node workers on one key', () => {
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('overlaps no more than a PHP-only fleet, and never between Node holders', async () => {
    const phpOnly = merge(
      await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((id) => phpWorker('fleet:php', 'witness:php', id))),
    );
    const nodeWorkers = await Promise.all(
      [4, 5, 6, 7].map((id) => nodeWorker('fleet:mixed', 'witness:mixed', id)),
    );
    // PHP joins once Node holds the lock: a PHP holder keeps it by taking its own stale value
    // over before Redis expires it (B2), so Node would rarely get in after PHP.
    let nodeHeld!: () => void;
    const firstNodeHold = new Promise<void>((resolve) => {
      nodeHeld = resolve;
    });
    const nodeRuns = nodeWorkers.map((run) => run(nodeHeld));
    await firstNodeHold;
    const phpRuns = [0, 1, 2, 3].map((id) => phpWorker('fleet:mixed', 'witness:mixed', id));
    const mixed = merge(await Promise.all([...phpRuns, ...nodeRuns]));
    const nodeWithNode = mixed.overlaps.filter(([a, b]) => a.startsWith('node') && b.startsWith('node'));
    console.log(
      `fleet (seed ${SEED}, ${RUN_MS} ms, expire ${EXPIRE} s): PHP-only ${phpOnly.overlaps.length} overlaps in ` +
        `${phpOnly.acquired.php} holds; mixed ${mixed.overlaps.length} overlaps in ${mixed.acquired.php} PHP + ` +
        `${mixed.acquired.node} Node holds ` +
        `(${nodeWithNode.length} between Node holders)`,
    );
    expect(mixed.overlaps.length).toBeLessThanOrEqual(phpOnly.overlaps.length);
    expect(nodeWithNode).toEqual([]);
    // Node really took part: otherwise the comparison says nothing.
    expect(mixed.acquired.node).toBeGreaterThan(0);
    const redis = server.client();
    for (const key of ['fleet:php', 'fleet:mixed']) expect(await redis.ttl(key)).not.toBe(-1);
  });
});
