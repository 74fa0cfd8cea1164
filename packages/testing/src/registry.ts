/**
 * The processes this library started in this Node process, so that they are killed on exit
 * even when a test crashed or forgot `stop()`. Only pids recorded here are ever signalled.
 */
const live = new Map<number, string>();
let hooked = false;

export function trackProcess(pid: number, dir: string): void {
  live.set(pid, dir);
  if (hooked) return;
  hooked = true;
  process.once('exit', killAll);
}

export function untrackProcess(pid: number): void {
  live.delete(pid);
}

function killAll(): void {
  for (const pid of live.keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  live.clear();
}
