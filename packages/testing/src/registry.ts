import { rmSync } from 'node:fs';
import { guardProcess, releaseProcess } from './watcher.js';

/**
 * The processes this library started in this Node process. Two nets make sure none outlives it:
 * an exit hook for ordinary exits, and the out-of-process guard (see `watcher.ts`) for the
 * deaths that run no hook. Only pids recorded here are ever signalled.
 */
const live = new Map<number, string>();
let hooked = false;

export function trackProcess(pid: number, dir: string): void {
  live.set(pid, dir);
  guardProcess(pid, dir);
  if (hooked) return;
  hooked = true;
  process.once('exit', killAll);
}

export function untrackProcess(pid: number): void {
  if (live.delete(pid)) releaseProcess(pid);
}

function killAll(): void {
  for (const [pid, dir] of live) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    rmSync(dir, { recursive: true, force: true });
  }
  live.clear();
}
