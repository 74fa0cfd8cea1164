import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const register = fileURLToPath(new URL('../../../../tooling/register.mjs', import.meta.url));

/** A TypeScript script run in its own Node process, talked to by lines on stdin and stdout. */
export interface ScriptProcess {
  readonly child: ChildProcess;
  /** Sends one line to its stdin. */
  send(line: string): void;
  /** The next line it prints (after those already taken) that passes `accept`. */
  line(accept?: (line: string) => boolean): Promise<string>;
  /** Freezes it (SIGSTOP): its timers and sockets stop until `resume()`. */
  pause(): void;
  resume(): void;
  /** Ends its stdin (scripts that wait for it then finish) and answers its exit code. */
  finish(): Promise<number | null>;
  /** Kills it, if still running, and waits for the exit. */
  stop(): Promise<void>;
}

/** Starts the script at `script` (a file URL, e.g. `new URL('./x.ts', import.meta.url)`) with `plan` as JSON in argv[2]. */
export function startScript(script: URL, plan: unknown): ScriptProcess {
  const path = fileURLToPath(script);
  const child = spawn(process.execPath, ['--import', register, path, JSON.stringify(plan)], {
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
    for (const check of [...waiting]) check();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    send: (line) => child.stdin?.write(`${line}\n`),
    line(accept = () => true) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const index = lines.findIndex(accept);
          if (index === -1) return;
          waiting.delete(check);
          resolve(lines.splice(index, 1)[0]!);
        };
        waiting.add(check);
        check();
        void exited.then(() => {
          if (waiting.delete(check))
            reject(new Error(`${path} exited before printing the expected line: ${stderr}`));
        });
      });
    },
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    finish() {
      child.stdin?.end();
      return exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
      await exited;
    },
  };
}
