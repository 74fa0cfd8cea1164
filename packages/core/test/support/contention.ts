import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Interval, parseIntervals } from './history.js';

const register = fileURLToPath(new URL('../../../../tooling/register.mjs', import.meta.url));
const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** What each worker process is told. */
export interface ContentionPlan {
  /** Module (absolute path) whose default export builds a locker from `config`: see worker.ts. */
  readonly factory: string;
  /** Passed to the factory as is (URLs, protocol options). */
  readonly config: unknown;
  readonly key: string;
  /** The Redis URL holding the witness counter. */
  readonly witnessUrl: string;
  readonly witnessKey: string;
  readonly workers: number;
  readonly iterations: number;
}

/** Runs `workers` processes, each acquiring `key` `iterations` times; resolves with every interval. */
export async function runContention(plan: ContentionPlan): Promise<Interval[]> {
  const outputs = await Promise.all(
    Array.from({ length: plan.workers }, (_, id) => runWorker(JSON.stringify({ ...plan, id }))),
  );
  return outputs.flatMap(parseIntervals);
}

function runWorker(args: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', register, worker, args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`worker exited ${code}: ${err}`)),
    );
  });
}
