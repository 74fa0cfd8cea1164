import { spawn } from 'node:child_process';
import { join } from 'node:path';

export interface RunResult {
  readonly code: number | null;
  readonly timedOut: boolean;
  readonly output: string;
}

/**
 * Runs one extracted block as a user would (`node --import <register> file.ts`) from `cwd`, and
 * kills it when it has not exited by `timeoutMs`: a program that never closes its client hangs.
 */
export function runBlock(
  root: string,
  file: string,
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<RunResult> {
  const child = spawn(process.execPath, ['--import', join(root, 'tooling/register.mjs'), file], {
    cwd: options.cwd,
    // tsx reads the tsconfig in the working directory for its `@lock/*` paths; point it at the root's.
    env: { ...options.env, TSX_TSCONFIG_PATH: join(root, 'tsconfig.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs);
  return new Promise((done, fail) => {
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, timedOut, output });
    });
  });
}
