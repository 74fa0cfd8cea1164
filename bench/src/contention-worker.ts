/**
 * One process of the multi-process contention run. Builds its subject, warms it up, prints
 * `ready`, waits for a line on stdin, runs its waiters and prints their holds as one JSON line.
 */
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { countRoundTrips, roundTripsSent } from './measure/round-trips.js';
import { cpuMsSince, hostNow } from './measure/stats.js';
import { runWaiters, type WaiterPlan } from './scenarios/contention.js';
import type { WorkerReport } from './scenarios/contention-runs.js';
import { makeSubject, type SubjectKind } from './subjects.js';

interface WorkerArgs {
  readonly kind: SubjectKind;
  readonly urls: readonly string[];
  readonly plan: WaiterPlan;
}

/** How long each worker's waiters run before the measured run (see below). */
const WARM_MS = 1_500;

countRoundTrips();
const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const clients = args.urls.map((url) => new Redis(url));
const subject = makeSubject(args.kind, clients);
// The waiters' loop on a key of their own before the timed one: a new process runs a waiting path
// interpreted until V8 compiles it, and a service that waits for locks all day runs it compiled.
// The workers start together, so they mostly contend for the warm-up key across processes too.
await runWaiters(subject, { ...args.plan, key: `${args.plan.key}:warm-up`, durationMs: WARM_MS }, hostNow);

const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.once('line', () => resolve()));
process.stdout.write('ready\n');
await go;
lines.close();

const sentBefore = roundTripsSent();
const started = hostNow();
const cpu = process.cpuUsage();
const holds = await runWaiters(subject, args.plan, hostNow);
const report: WorkerReport = {
  holds,
  roundTrips: roundTripsSent() - sentBefore,
  started,
  finished: hostNow(),
  cpuMs: cpuMsSince(cpu),
};
process.stdout.write(`${JSON.stringify(report)}\n`);
await subject.close();
for (const client of clients) client.disconnect();
