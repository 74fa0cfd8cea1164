import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { privateDir } from './private-dir.js';
import { guardReservation, releaseReservation } from './watcher.js';

/**
 * The first port the kernel hands out to outgoing connections (Linux default 32768). Servers
 * stay below it so that no client socket can take their port between a probe and the bind, or
 * while a server is down for `restart()`.
 */
function ephemeralStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    return Number(low) || 32_768;
  } catch {
    return 32_768;
  }
}

/** The ports `freePort` draws from: `low` included, `high` excluded. */
export function portRange(): { low: number; high: number } {
  const low = 10_000;
  return { low, high: Math.max(low + 1_000, ephemeralStart() - 10_000) };
}

/**
 * Ports reserved by servers of this process that are not stopped yet, killed ones included: a
 * killed server's port must still be there for its `restart()`, and no other test may reach it.
 */
const held = new Set<number>();
let hooked = false;

/**
 * Where reservations are shared with this user's other processes (other vitest workers, other
 * runs): one file per port, holding the pid of the process that reserved it. One directory per
 * user: in a directory another user created, creating files fails (EACCES), and so would every
 * server start.
 */
export function reservationDir(): string {
  return join(tmpdir(), `lock-testing-ports-${process.getuid?.() ?? userInfo().username}`);
}

const reservations = reservationDir();

/**
 * A loopback port that was free a moment ago, and whose cluster bus port (port + 10000) was too,
 * and that no server of this library reserved, in this process or another, even while that
 * server is killed. Another process may still take it before redis-server binds it, so callers
 * retry on "address in use" (see `RedisServer.start`); drawing at random keeps parallel test
 * files apart.
 */
export async function freePort(): Promise<number> {
  const { low, high } = portRange();
  for (;;) {
    const port = low + Math.floor(Math.random() * (high - low));
    // A cluster node also binds port + 10000, so a reservation 10000 away collides too.
    const near = [port - 10_000, port, port + 10_000];
    if (near.some((other) => held.has(other) || reserved(other))) continue;
    if ((await canBind(port)) && (await canBind(port + 10_000))) return port;
  }
}

/** A free port, reserved for this process until `releasePort`. */
export async function reservePort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (claim(port)) return port;
  }
}

/** Ends a reservation of `reservePort`. Idempotent. */
export function releasePort(port: number): void {
  if (!held.delete(port)) return;
  const file = join(reservations, String(port));
  rmSync(file, { force: true });
  releaseReservation(file);
}

/**
 * Creates the reservation directory, or checks that the one found is a directory of this user
 * (see `privateDir`). On every claim, so that a directory a tmp cleaner removed mid-run comes back.
 */
function prepare(): void {
  privateDir(reservations, 'port reservations need');
}

function claim(port: number): boolean {
  prepare();
  const file = join(reservations, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // A file whose owner died without stopping its servers is removed, not taken over: another
    // process may be reclaiming it at this moment, and the next draw is as good.
    if (!reserved(port)) rmSync(file, { force: true });
    return false;
  }
  held.add(port);
  // The exit hook below runs on ordinary exits only; a killed process leaves this to the guard.
  guardReservation(file);
  if (!hooked) {
    hooked = true;
    process.once('exit', releaseAll);
  }
  return true;
}

/** Whether a live process (this one included) holds the reservation file of `port`. */
function reserved(port: number): boolean {
  let owner: number;
  try {
    owner = Number(readFileSync(join(reservations, String(port)), 'utf8'));
  } catch {
    return false;
  }
  // An empty file is one being written right now.
  if (!Number.isInteger(owner) || owner <= 0) return true;
  try {
    process.kill(owner, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function releaseAll(): void {
  for (const port of [...held]) releasePort(port);
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(true)));
  });
}
