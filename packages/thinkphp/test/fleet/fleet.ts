import { execFile as execFileCallback } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { RedisServer } from '@lock/testing';
import { checkHistory, type Interval, parseIntervals } from '../../../core/test/support/history.js';

const packageDir = fileURLToPath(new URL('../../', import.meta.url));
const register = fileURLToPath(new URL('../../../../tooling/register.mjs', import.meta.url));
const nodeWorker = fileURLToPath(new URL('./node-worker.ts', import.meta.url));
const cli = fileURLToPath(new URL('../php/cli.php', import.meta.url));
const execFile = promisify(execFileCallback);

/** What every worker process is given, PHP or Node. */
export interface WorkerArgs {
  /** Prefix of the handshake lists: `<fleet>:ready`, `<fleet>:go:<id>`, `<fleet>:held`. */
  readonly fleet: string;
  readonly port: number;
  readonly key: string;
  /** The witness counter each holder reads, then writes back plus one. */
  readonly witness: string;
  /** LOCK_EXPIRE in seconds. */
  readonly expire: number;
  readonly id: number;
  readonly seed: number;
  /** Bounds of a hold's work, ms. */
  readonly work: readonly [number, number];
  /** Seconds added to PHP's time(): a PHP host whose clock is off. */
  readonly offset: number;
}

/** One worker of a fleet: which implementation, and for PHP how far its host clock is off. */
export interface Slot {
  readonly kind: 'php' | 'node';
  readonly offset?: number;
}

export interface FleetPlan {
  readonly server: RedisServer;
  /** Names the fleet's key, witness and handshake lists, so fleets can share a server. */
  readonly name: string;
  readonly slots: readonly Slot[];
  /** Slot `i` draws from `seed + i`: the same slot draws the same work times in every fleet. */
  readonly seed: number;
  readonly expire: number;
  readonly work: readonly [number, number];
  /** How long the race lasts once the first slots go. */
  readonly runMs: number;
  /** Slots that go first; the others go once one of them has begun its first hold. */
  readonly first: readonly number[];
}

/** What a fleet run saw. */
export interface FleetReport {
  readonly holds: { readonly php: number; readonly node: number };
  /** Holds that began while another (any kind) was still inside: `checkHistory` over all workers. */
  readonly overlaps: number;
  /** The same among Node holds only. */
  readonly nodeOverlaps: number;
  /** Node holds whose fence did not exceed that of the Node hold before. */
  readonly nodeFenceRegressions: number;
  /** Increments of the witness counter lost to concurrent read-modify-writes. */
  readonly lostUpdates: number;
  /** The lock key's TTL after the run (-2 gone, -1 none). */
  readonly keyTtl: number;
}

/**
 * Runs one fleet in child processes: every worker connects and reports ready, then the `first`
 * slots are let go, then the rest once a first hold has begun (the order the test needs, see
 * fleet.test.ts). All stop at the same CLOCK_MONOTONIC instant.
 */
export async function runFleet(plan: FleetPlan): Promise<FleetReport> {
  const { server, name, slots } = plan;
  const key = `${name}:lock`;
  const witness = `${name}:witness`;
  const outputs = slots.map((slot, id) =>
    runWorker(slot.kind, {
      fleet: name,
      port: server.port,
      key,
      witness,
      expire: plan.expire,
      id,
      seed: plan.seed + id,
      work: plan.work,
      offset: slot.offset ?? 0,
    }),
  );
  // A worker that dies makes the run fail at once, not at the next 30 s handshake timeout.
  const crashed = new Promise<never>((_, reject) => {
    for (const output of outputs) output.catch(reject);
  });
  const control = server.client();
  const blpop = async (list: string) => {
    if (!(await Promise.race([control.blpop(list, 30), crashed])))
      throw new Error(`nothing on ${list} within 30 s`);
  };
  try {
    for (const _ of slots) await blpop(`${name}:ready`);
    const until = String(process.hrtime.bigint() + BigInt(plan.runMs) * 1_000_000n);
    const go = (ids: readonly number[]) =>
      Promise.all(ids.map((id) => control.rpush(`${name}:go:${id}`, until)));
    await go(plan.first);
    await blpop(`${name}:held`);
    await go(slots.map((_, id) => id).filter((id) => !plan.first.includes(id)));
    const intervals = (await Promise.all(outputs)).flatMap(parseIntervals);
    const isNode = (interval: Interval) => slots[interval.worker]?.kind === 'node';
    const nodeHistory = checkHistory(intervals.filter(isNode));
    return {
      holds: { php: intervals.length - nodeHistory.intervals, node: nodeHistory.intervals },
      overlaps: checkHistory(intervals).overlaps,
      nodeOverlaps: nodeHistory.overlaps,
      nodeFenceRegressions: nodeHistory.fenceRegressions,
      lostUpdates: intervals.length - Number((await control.get(witness)) ?? '0'),
      keyTtl: await control.ttl(key),
    };
  } finally {
    control.disconnect();
  }
}

/** Runs one worker process; resolves with its stdout (one JSON line per hold). */
async function runWorker(kind: Slot['kind'], args: WorkerArgs): Promise<string> {
  const [command, argv] =
    kind === 'php'
      ? ['php', [cli, 'worker', JSON.stringify(args)]]
      : [process.execPath, ['--import', register, nodeWorker, JSON.stringify(args)]];
  // From the package folder, tsx resolves `@lock/*` to sources through tsconfig paths.
  const { stdout } = await execFile(command, argv, { cwd: packageDir, timeout: 60_000 });
  return stdout;
}
