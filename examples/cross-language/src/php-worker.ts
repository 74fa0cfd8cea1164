/** Runs one process of the PHP service (php/worker.php under php-cli) and collects its sales. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Sale } from './node-worker.js';

const script = fileURLToPath(new URL('../php/worker.php', import.meta.url));

export interface PhpWorkerArgs {
  readonly name: string;
  /** Where Predis connects: a `redis://` URL. */
  readonly url: string;
  readonly key: string;
  readonly counter: string;
  readonly expire: number;
  readonly sales: number;
  readonly patience: number;
}

export interface PhpWorker {
  /** Settles once the process is connected and waits for `go()`. */
  readonly ready: Promise<void>;
  go(): void;
  /** Its sales, once it has exited 0. */
  readonly done: Promise<Sale[]>;
  /** Stops it if still running. */
  stop(): void;
}

export function startPhpWorker(args: PhpWorkerArgs): PhpWorker {
  const child = spawn('php', [script, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'inherit'] });
  // Writing `go` to a process that has already died: `done` reports why it died.
  child.stdin.on('error', () => {});
  const lines = createInterface({ input: child.stdout });
  const sales: Sale[] = [];
  let markReady: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  lines.on('line', (line) => {
    if (line === 'ready') markReady();
    else sales.push(JSON.parse(line) as Sale);
  });
  // `once` rejects on the child's 'error': php-cli not installed.
  const done = Promise.all([once(child, 'exit'), once(lines, 'close')]).then(
    ([[code]]) => {
      if (code !== 0) throw new Error(`${args.name}: php exited with ${code}`);
      return sales;
    },
    (error: Error) => {
      throw new Error(`${args.name}: cannot run php (apt-get install php-cli php-predis): ${error.message}`);
    },
  );
  // Awaited by the caller only once every worker is ready: a failure before that is reported
  // through `ready`, never as an unhandled rejection.
  done.catch(() => {});
  return {
    // A process that dies before `ready` (php-predis missing, Redis unreachable) fails the wait.
    ready: Promise.race([ready, done.then(() => {})]),
    go: () => child.stdin.end('go\n'),
    done,
    stop: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
    },
  };
}
