import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * The guard that outlives this process. A detached `node` child reads one line per server
 * started (`+ pid dir`) or stopped (`- pid`), and per port reserved (`r file`) or released
 * (`u file`), on its stdin. The kernel closes that pipe however this process ends (SIGKILL, a
 * vitest worker killed on timeout, a crash), and on end-of-file the guard kills every server
 * still recorded, removes its directory, then removes the reservation files still recorded.
 *
 * A pid is only signalled while `/proc/<pid>/cwd` is still the server's own directory
 * (redis-server chdirs into `dir`), so a recycled pid is never hit. A reservation file is only
 * removed while it still names this process, whose pid the guard gets as its argument (its
 * parent pid would be 1 already if this process died before the guard had started): once this
 * process is dead, another one may already have reclaimed the port.
 */
const guardSource = `
const { readFileSync, readlinkSync, rmSync } = require('node:fs');
const owner = process.argv[1];
const live = new Map();
const reservations = new Set();
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  for (let end = pending.indexOf('\\n'); end >= 0; end = pending.indexOf('\\n')) {
    const [op, subject, dir] = pending.slice(0, end).split('\\t');
    pending = pending.slice(end + 1);
    if (op === '+') live.set(Number(subject), dir);
    else if (op === '-') live.delete(Number(subject));
    else if (op === 'r') reservations.add(subject);
    else if (op === 'u') reservations.delete(subject);
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
  for (const file of reservations) {
    try {
      if (readFileSync(file, 'utf8') === owner) rmSync(file, { force: true });
    } catch {}
  }
  process.exit(0);
});
`;

let guard: ChildProcess | undefined;

/** Spawns a guard process; exported for its own tests, the library keeps one per process. */
export function spawnGuard(): ChildProcess {
  // Without NODE_OPTIONS: loaders meant for the tests (tsx, coverage) have no business in the guard.
  const { NODE_OPTIONS: _, ...env } = process.env;
  const child = spawn(process.execPath, ['-e', guardSource, String(process.pid)], {
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

/** Tells the guard to remove the reservation file `file` if this process dies first. */
export function guardReservation(file: string): void {
  send(`r\t${file}`);
}

/** Tells the guard that the reservation `file` has been removed by this process. */
export function releaseReservation(file: string): void {
  send(`u\t${file}`);
}

/** The guard's pid, once a server has been started; for tests of the guard itself. */
export function guardPid(): number | undefined {
  return guard?.pid;
}
