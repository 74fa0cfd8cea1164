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

countRoundTrips();
const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
const clients = args.urls.map((url) => new Redis(url));
const subject = makeSubject(args.kind, clients);
await (await subject.acquire(`${args.plan.key}:warm-up:${process.pid}`, 1_000))();

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
