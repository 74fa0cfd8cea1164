import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * The guard that outlives this process. A detached `node` child reads one line per server
 * started (`+ pid dir`) or stopped (`- pid`) on its stdin. The kernel closes that pipe however
 * this process ends (SIGKILL, a vitest worker killed on timeout, a crash), and on end-of-file
 * the guard kills every server still recorded, then removes its directory.
 *
 * A pid is only signalled while `/proc/<pid>/cwd` is still the server's own directory
 * (redis-server chdirs into `dir`), so a recycled pid is never hit.
 */
const guardSource = `
const { readlinkSync, rmSync } = require('node:fs');
const live = new Map();
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let end = pending.indexOf('\\n'); end >= 0; end = pending.indexOf('\\n')) {
    const [op, pid, dir] = pending.slice(0, end).split('\\t');
    pending = pending.slice(end + 1);
    if (op === '+') live.set(Number(pid), dir);
    else live.delete(Number(pid));
  }
});
process.stdin.on('end', () => {
  for (const [pid, dir] of live) {
    try {
      if (process.platform !== 'linux' || readlinkSync('/proc/' + pid + '/cwd') === dir) {
        process.kill(pid, 'SIGKILL');
      }
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
});
`;

let guard: ChildProcess | undefined;

/** Spawns a guard process; exported for its own tests, the library keeps one per process. */
export function spawnGuard(): ChildProcess {
  // Without NODE_OPTIONS: loaders meant for the tests (tsx, coverage) have no business in the guard.
  const { NODE_OPTIONS: _, ...env } = process.env;
  const child = spawn(process.execPath, ['-e', guardSource], {
    detached: true,
    env,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  // Neither the guard nor its pipe may keep this process alive.
  child.unref();
  (child.stdin as Socket | null)?.unref();
  // A guard that cannot start or was killed must not crash the tests; the exit hook remains.
  child.on('error', () => {});
  child.stdin?.on('error', () => {});
  return child;
}

function send(line: string): void {
  guard ??= spawnGuard();
  guard.stdin?.write(`${line}\n`);
}

/** Tells the guard to kill `pid` (and remove `dir`) if this process dies first. */
export function guardProcess(pid: number, dir: string): void {
  send(`+\t${pid}\t${dir}`);
}

/** Tells the guard that `pid` has been stopped by this process. */
export function releaseProcess(pid: number): void {
  send(`-\t${pid}`);
}

/** The guard's pid, once a server has been started; for tests of the guard itself. */
export function guardPid(): number | undefined {
  return guard?.pid;
}
