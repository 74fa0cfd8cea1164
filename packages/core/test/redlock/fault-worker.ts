/**
 * A RedLock contender in its own process, for the fault tests (fault-fleet.ts starts it).
 * argv[2] is a `FaultPlan` as JSON. It connects, prints `{"ready":true}`, waits for a line on
 * stdin, then takes the lock `iterations` times. Each critical section is real: it reads the
 * witness counter, works for `hold` ms, writes the counter back plus one. It prints one JSON
 * line per critical section as soon as it ends: its `process.hrtime` interval (CLOCK_MONOTONIC,
 * shared by every process of the host), when the acquire call was made and when the attempt
 * that got the lock was sent, the fence, and whether the lock was still held at the end (a
 * hold the library reported lost is not a belief of mutual exclusion). A failed acquisition
 * prints `{"error": …}` with when the call was made and when it failed, and the loop goes on
 * (or ends, after `giveUpAfter` failures in a row). A plan may open the run with a `Meeting`,
 * which orders its first sections through marks on the witness server.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createEngine } from '../../src/engine/engine.js';
import { backendOn } from '../../src/redlock/backend.js';
import { createRedlock } from '../../src/redlock/create.js';
import { resolveQuorumOptions } from '../../src/redlock/options.js';
import { validityOf } from '../../src/redlock/quorum.js';
import type { Locker } from '../../src/types.js';

/** What one contender process is told. */
export interface FaultPlan {
  readonly id: number;
  /** One URL per master, in the same order for every contender; `reachable[i]` false simulates a partition. */
  readonly masters: readonly string[];
  /** Which masters this contender can reach; the others get a connection refused at once. */
  readonly reachable: readonly boolean[];
  /** A URL nothing listens on: what an unreachable master's client connects to. */
  readonly nowhere: string;
  /**
   * A wrong quorum for the broken variant, built below the public API (which cannot be given
   * one): only tests use it, to show that their checker catches what it breaks.
   */
  readonly quorum?: number;
  readonly key: string;
  readonly witnessUrl: string;
  readonly iterations: number;
  /** How long each critical section works, in ms. */
  readonly hold: number;
  readonly ttl: number;
  readonly wait: number;
  /** The wait of an acquisition made after a failed one, in ms. Default: `wait`. */
  readonly waitAfterFailure?: number;
  readonly nodeTimeout: number;
  /**
   * Ends the run before `iterations` after this many failed acquisitions in a row. Default: never.
   * Once the masters fail closed, every further iteration would only wait out `wait` again.
   */
  readonly giveUpAfter?: number;
  /** This contender's part in a meeting that starts the run, if any: see `Meeting`. */
  readonly meeting?: Meeting;
}

/**
 * A meeting forces the one overlap a broken lock allows, whatever the scheduling. The host takes
 * the lock and stays in its first section until the guest has tried once (without waiting) to
 * take it too; the other contenders start once the host has released. With a working lock the
 * guest is refused; with a broken one both hold it at once.
 */
export type Meeting = 'host' | 'guest' | 'later';

const plan = JSON.parse(process.argv[2]!) as FaultPlan;
const clients = plan.masters.map((url, index) =>
  plan.reachable[index] ? new Redis(url) : new Redis(plan.nowhere, { enableOfflineQueue: false }),
);
// The contender's own clients: its application handles their errors. The library's own
// connections must not need this (the test fails on any "Unhandled error event").
for (const client of clients) client.on('error', () => {});
const witness = new Redis(plan.witnessUrl);

// The default, given explicitly: the worker derives from it when each grant's attempt was sent.
const driftFactor = 0.01;

function lockerOf(): Locker {
  if (plan.quorum === undefined)
    return createRedlock({ clients, nodeTimeout: plan.nodeTimeout, driftFactor });
  const context = resolveQuorumOptions({ clients, nodeTimeout: plan.nodeTimeout, driftFactor });
  const backend = backendOn({ ...context, quorum: plan.quorum });
  return createEngine(backend, { commandTimeout: backend.callTimeout });
}

const locker = lockerOf();
await Promise.all(clients.filter((_, index) => plan.reachable[index]).map((client) => client.ping()));
await witness.ping();
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
await new Promise((resolve) => process.stdin.once('data', resolve));
// Nothing more is read: an open stdin would keep the process alive after the last iteration.
process.stdin.destroy();

/** Marks of the meeting's steps, on the witness server. */
const marks = {
  hostIn: `${plan.key}:host-in`,
  guestTried: `${plan.key}:guest-tried`,
  met: `${plan.key}:met`,
};

/**
 * The hrtime at which the attempt that granted `validUntil` was sent. A RedLock grant is valid
 * for exactly `validityOf(ttl)` from its attempt's start (RedLock hands no grant over on release),
 * so this tells when the grant was decided, however late it was reported.
 */
function sentAtOf(validUntil: number): bigint {
  const agoMs = performance.now() - (validUntil - validityOf(plan.ttl, driftFactor));
  return process.hrtime.bigint() - BigInt(Math.round(agoMs * 1e6));
}

/** Resolves once `mark` is set; throws (the process then exits non-zero) if a partner never sets it. */
async function untilMarked(mark: string): Promise<void> {
  const end = performance.now() + 10_000;
  while ((await witness.exists(mark)) === 0) {
    if (performance.now() > end) throw new Error(`contender ${plan.id}: ${mark} never set`);
    await sleep(5);
  }
}

if (plan.meeting === 'guest') await untilMarked(marks.hostIn);
if (plan.meeting === 'later') await untilMarked(marks.met);

let failures = 0;
for (let i = 0; i < plan.iterations && failures !== plan.giveUpAfter; i++) {
  // Only the first iteration of the host and the guest is part of the meeting.
  const host = i === 0 && plan.meeting === 'host';
  const guest = i === 0 && plan.meeting === 'guest';
  let lock: Awaited<ReturnType<Locker['acquire']>>;
  const requested = process.hrtime.bigint();
  try {
    const wait = guest ? 0 : failures > 0 ? (plan.waitAfterFailure ?? plan.wait) : plan.wait;
    lock = await locker.acquire(plan.key, { ttl: plan.ttl, wait });
  } catch (error) {
    const at = process.hrtime.bigint();
    failures += 1;
    if (guest) await witness.set(marks.guestTried, '1');
    const { name, code } = error as { name: string; code?: string };
    const line = { worker: plan.id, error: name, code, requested: String(requested), at: String(at) };
    process.stdout.write(`${JSON.stringify(line)}\n`);
    continue;
  }
  const start = process.hrtime.bigint();
  const sent = sentAtOf(lock.validUntil);
  failures = 0;
  if (guest) await witness.set(marks.guestTried, '1');
  if (host) {
    await witness.set(marks.hostIn, '1');
    await untilMarked(marks.guestTried);
  }
  const seen = Number((await witness.get(plan.key)) ?? '0');
  await sleep(plan.hold);
  await witness.set(plan.key, String(seen + 1));
  const end = process.hrtime.bigint();
  const held = !lock.signal.aborted && lock.validUntil > performance.now();
  await lock.release().catch(() => {});
  if (host) await witness.set(marks.met, '1');
  const line = {
    worker: plan.id,
    requested: String(requested),
    sent: String(sent),
    start: String(start),
    end: String(end),
    fence: lock.fence,
    held,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

await locker.close();
witness.disconnect();
for (const client of clients) client.disconnect();
