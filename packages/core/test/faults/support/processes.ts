import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const register = fileURLToPath(new URL('../../../../../tooling/register.mjs', import.meta.url));
const holderScript = fileURLToPath(new URL('./holder-process.ts', import.meta.url));

/** A holder-process.ts child and the lines it printed so far. */
export interface HolderProcess {
  readonly child: ChildProcess;
  /** Resolves with the next line the child prints that passes `accept`. */
  line(accept: (line: string) => boolean): Promise<string>;
  /** Ends its stdin (it then releases and exits) and waits for the exit. */
  finish(): Promise<number | null>;
}

/** Starts holder-process.ts; see that file for the plan. */
export function startHolder(plan: { url: string; key: string; ttl: number; wait: number }): HolderProcess {
  const child = spawn(process.execPath, ['--import', register, holderScript, JSON.stringify(plan)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiting = new Set<() => void>();
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const check of waiting) check();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    line(accept) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.find(accept);
          if (found === undefined) return;
          waiting.delete(check);
          resolve(found);
        };
        waiting.add(check);
        check();
        void exited.then(() => {
          if (!waiting.delete(check)) return;
          reject(new Error(`holder exited before printing the expected line: ${stderr}`));
        });
      });
    },
    async finish() {
      child.stdin?.end();
      return exited;
    },
  };
}
