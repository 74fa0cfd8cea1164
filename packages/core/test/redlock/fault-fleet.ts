import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Interval } from '../support/history.js';
import type { FaultPlan } from './fault-worker.js';

const register = fileURLToPath(new URL('../../../../tooling/register.mjs', import.meta.url));
const workerScript = fileURLToPath(new URL('./fault-worker.ts', import.meta.url));

/** A critical section as its contender reported it (hrtime, ns). */
export interface Section extends Interval {
  readonly requested: bigint;
  /**
   * When the attempt that got the lock was sent: the grant was decided after it, however late
   * the section started.
   */
  readonly sent: bigint;
  /** Whether the lock was still held, by the library's account, when the section ended. */
  readonly held: boolean;
}

/** A failed acquisition as its contender reported it (hrtime, ns). */
export interface Failure {
  readonly worker: number;
  /** The error's name, e.g. `QuorumError`. */
  readonly name: string;
  readonly code: string | undefined;
  /** When the acquire call was made. */
  readonly requested: bigint;
  /** When it failed. */
  readonly at: bigint;
}

/** What the contenders reported once they all exited. */
export interface FleetReport {
  readonly sections: Section[];
  readonly errors: Failure[];
  /** Everything the contenders wrote on stderr. */
  readonly stderr: string;
}

/** Contender processes started together and released at once by `go()`. */
export interface Fleet {
  /** Resolves once every contender has connected and waits for `go()`. */
  readonly ready: Promise<void>;
  go(): void;
  /** Resolves once the contenders together have reported `count` critical sections or failed acquisitions. */
  sections(count: number): Promise<void>;
  /** Resolves when every contender exited 0, with what they reported. */
  readonly done: Promise<FleetReport>;
  /** Kills the contenders still running (used on a failed test). */
  kill(): void;
}

/** Starts one fault-worker.ts process per plan. */
export function startFleet(plans: readonly FaultPlan[]): Fleet {
  const sections: Section[] = [];
  const errors: Failure[] = [];
  const watchers = new Set<() => void>();
  let stderr = '';
  const notify = () => {
    for (const watch of watchers) watch();
  };
  const children: ChildProcess[] = [];
  const readies: Promise<void>[] = [];
  const exits: Promise<void>[] = [];
  for (const plan of plans) {
    const child = spawn(process.execPath, ['--import', register, workerScript, JSON.stringify(plan)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    let markReady: () => void = () => {};
    readies.push(
      new Promise<void>((resolve) => {
        markReady = resolve;
      }),
    );
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const parsed = JSON.parse(line) as {
        ready?: true;
        error?: string;
        code?: string;
        at: string;
        worker: number;
        requested: string;
        sent: string;
        start: string;
        end: string;
        fence: number;
        held: boolean;
      };
      if (parsed.ready) return markReady();
      if (parsed.error !== undefined)
        errors.push({
          worker: parsed.worker,
          name: parsed.error,
          code: parsed.code,
          requested: BigInt(parsed.requested),
          at: BigInt(parsed.at),
        });
      else
        sections.push({
          worker: parsed.worker,
          requested: BigInt(parsed.requested),
          sent: BigInt(parsed.sent),
          start: BigInt(parsed.start),
          end: BigInt(parsed.end),
          fence: parsed.fence,
          held: parsed.held,
        });
      notify();
    });
    exits.push(
      new Promise<void>((resolve, reject) => {
        child.once('exit', (code, signal) => {
          if (code === 0) resolve();
          else reject(new Error(`contender ${plan.id} exited ${code ?? signal}: ${stderr}`));
        });
      }),
    );
  }
  const done = Promise.all(exits).then(() => ({ sections, errors, stderr }));
  // A contender that dies early must fail the test, not leave `ready` or `sections` pending.
  const failed = done.then(() => new Promise<never>(() => {}));
  return {
    ready: Promise.race([Promise.all(readies).then(() => {}), failed]),
    go() {
      for (const child of children) child.stdin!.write('go\n');
    },
    sections(count) {
      const reached = new Promise<void>((resolve) => {
        const watch = () => {
          if (sections.length + errors.length < count) return;
          watchers.delete(watch);
          resolve();
        };
        watchers.add(watch);
        watch();
      });
      // Resolves early when every contender has exited (the test then sees the counts), rejects when one failed.
      return Promise.race([reached, done.then(() => {})]);
    },
    done,
    kill() {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}
