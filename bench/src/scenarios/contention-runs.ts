import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { type Counted, counted } from '../measure/counted.js';
import { cpuMsSince, hostNow } from '../measure/stats.js';
import type { Subject, SubjectKind } from '../subjects.js';
import { type ContentionSlice, type Hold, runWaiters, type WaiterPlan } from './contention.js';

const register = fileURLToPath(new URL('../../register.mjs', import.meta.url));
const workerEntry = fileURLToPath(new URL('../contention-worker.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Shape of the one-key contention run: `waiters` loops that hold `holdMs` then work `workMs`. */
export interface ContentionShape {
  readonly waiters: number;
  readonly holdMs: number;
  readonly workMs: number;
  readonly durationMs: number;
}

/** Waiter ids of the in-process run. */
export function localWaiters(shape: ContentionShape): string[] {
  return Array.from({ length: shape.waiters }, (_, i) => `w${i}`);
}

/** Waiter ids of the run across `processes` processes, per process. */
export function processWaiters(shape: ContentionShape, processes: number): string[][] {
  const perProcess = Math.ceil(shape.waiters / processes);
  return Array.from({ length: processes }, (_, p) =>
    Array.from({ length: perProcess }, (_, w) => `p${p}w${w}`),
  );
}

function planFor(key: string, shape: ContentionShape, waiters: readonly string[]): WaiterPlan {
  return { key, waiters, holdMs: shape.holdMs, workMs: shape.workMs, durationMs: shape.durationMs };
}

/** All waiters in this process, sharing one subject (one connection per server). */
export function contentionInProcess(
  subject: Subject,
  servers: readonly Redis[],
  shape: ContentionShape,
): Promise<Counted<ContentionSlice>> {
  const plan = planFor(`bench:contended:${subject.name}`, shape, localWaiters(shape));
  return counted(servers, async () => {
    const start = hostNow();
    const cpu = process.cpuUsage();
    const holds = await runWaiters(subject, plan, hostNow);
    return { holds, wallMs: hostNow() - start, cpuMs: cpuMsSince(cpu) };
  });
}

/** The waiters split over child processes, each with its own subject and connections. */
export async function contentionAcrossProcesses(
  kind: SubjectKind,
  urls: readonly string[],
  servers: readonly Redis[],
  shape: ContentionShape,
  processes: number,
): Promise<Counted<ContentionSlice>> {
  const key = `bench:contended-processes:${kind}`;
  const children = processWaiters(shape, processes).map((ids) =>
    startWorker(kind, urls, planFor(key, shape, ids)),
  );
  await Promise.all(children.map((child) => child.ready));
  const run = await counted(servers, async () => {
    for (const child of children) child.go();
    return Promise.all(children.map((child) => child.report));
  });
  const reports = run.result;
  return {
    result: {
      holds: reports.flatMap((report) => report.holds),
      wallMs: Math.max(...reports.map((r) => r.finished)) - Math.min(...reports.map((r) => r.started)),
      cpuMs: reports.reduce((total, report) => total + report.cpuMs, 0),
    },
    commands: run.commands,
    // The workers count their own connections' commands; this process sent none of them.
    roundTrips: reports.reduce((total, report) => total + report.roundTrips, 0),
  };
}

/** What a worker prints when done: its holds, the commands its connections sent meanwhile, and when it ran. */
export interface WorkerReport {
  readonly holds: Hold[];
  readonly roundTrips: number;
  /** Host-monotonic ms when its waiters started and when the last one stopped (process start-up and exit excluded). */
  readonly started: number;
  readonly finished: number;
  /** CPU time (user + system) the process spent running its waiters, in ms. */
  readonly cpuMs: number;
}

interface Worker {
  readonly ready: Promise<void>;
  readonly report: Promise<WorkerReport>;
  go(): void;
}

function startWorker(kind: SubjectKind, urls: readonly string[], plan: WaiterPlan): Worker {
  const child = spawn(
    process.execPath,
    ['--import', register, workerEntry, JSON.stringify({ kind, urls, plan })],
    {
      cwd: repoRoot,
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let output = '';
  let signalReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    signalReady = resolve;
  });
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (output.startsWith('ready\n')) signalReady();
  });
  const report = new Promise<WorkerReport>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const json = output.split('\n').find((line) => line.startsWith('{'));
      if (code === 0 && json) resolve(JSON.parse(json) as WorkerReport);
      else reject(new Error(`contention worker (${kind}) exited with code ${code}`));
    });
  });
  return {
    // A worker that dies before it is ready must not leave the run waiting forever.
    ready: Promise.race([ready, report.then(() => {})]),
    report,
    go: () => child.stdin.end('go\n'),
  };
}
