import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { waitFor } from '../src/index.js';
import { reservationDir } from '../src/ports.js';
import { spawnGuard } from '../src/watcher.js';
import { alive } from './proc.js';

const register = fileURLToPath(new URL('../../../tooling/register.mjs', import.meta.url));
const owner = fileURLToPath(new URL('./fixtures/owner.ts', import.meta.url));

interface OwnerReport {
  pid: number;
  port: number;
  dir: string;
  guard: number;
}

const children: ChildProcess[] = [];

/** The file that reserves `port` across the processes of the machine (see `ports.ts`). */
const reservation = (port: number) => join(reservationDir(), String(port));

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** Runs the owner fixture and reads what it started. */
async function startOwner(mode: 'hold' | 'exit'): Promise<{ child: ChildProcess; report: OwnerReport }> {
  const child = spawn(process.execPath, ['--import', register, owner, mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout! });
  const [line] = await Promise.race([
    new Promise<string[]>((resolve) => lines.once('line', (first) => resolve([first]))),
    new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`owner exited with ${code}`))),
    ),
  ]);
  return { child, report: JSON.parse(line!) as OwnerReport };
}

function tempDir(): string {
  return realpathSync(mkdtempSync(join(tmpdir(), 'lock-testing-guard-')));
}

/**
 * Runs a `sleep` in `cwd`, hands a fresh guard the lines `script(pid)` and closes its stdin as a
 * dying owner would, then waits for the guard to finish.
 */
async function guardOver(cwd: string, script: (pid: number) => string): Promise<ChildProcess> {
  const sleeper = spawn('sleep', ['30'], { cwd });
  children.push(sleeper);
  const guard = spawnGuard();
  guard.stdin!.end(script(sleeper.pid!));
  await new Promise((resolve) => guard.once('exit', resolve));
  return sleeper;
}

// Bounds are generous for a loaded 2-core machine; the guard reacts to the pipe closing at once.
const gone = { timeout: 10_000 };

describe('process ownership', () => {
  it('an owner killed with SIGKILL leaves no redis-server, directory, port reservation or guard behind', async () => {
    const { child, report } = await startOwner('hold');
    expect(alive(report.pid)).toBe(true);
    expect(alive(report.guard)).toBe(true);
    expect(existsSync(report.dir)).toBe(true);
    expect(existsSync(reservation(report.port))).toBe(true);
    child.kill('SIGKILL');
    await waitFor('the orphaned redis-server to be killed', async () => !alive(report.pid), gone);
    await waitFor('its directory to be removed', async () => !existsSync(report.dir), gone);
    await waitFor(
      'its port reservation to be removed',
      async () => !existsSync(reservation(report.port)),
      gone,
    );
    await waitFor('the guard to exit', async () => !alive(report.guard), gone);
  });

  it('an owner that exits without stop() leaves no redis-server or directory behind', async () => {
    const { child, report } = await startOwner('exit');
    await new Promise((resolve) => child.once('exit', resolve));
    await waitFor('the redis-server to be killed', async () => !alive(report.pid), gone);
    await waitFor('its directory to be removed', async () => !existsSync(report.dir), gone);
  });

  it('the guard spares a recorded pid whose working directory is not the recorded one', async () => {
    // A recycled pid looks like this: same number, another process, elsewhere.
    const dir = tempDir();
    const bystander = await guardOver(tmpdir(), (pid) => `+\t${pid}\t${dir}\n`);
    expect(alive(bystander.pid!)).toBe(true);
    expect(existsSync(dir)).toBe(false);
  });

  it('the guard forgets a pid released before the owner dies', async () => {
    const dir = tempDir();
    const stopped = await guardOver(dir, (pid) => `+\t${pid}\t${dir}\n-\t${pid}\n`);
    expect(alive(stopped.pid!)).toBe(true);
    expect(existsSync(dir)).toBe(true);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the guard kills a recorded pid still running in its directory', async () => {
    const dir = tempDir();
    const orphan = await guardOver(dir, (pid) => `+\t${pid}\t${dir}\n`);
    const signal =
      orphan.signalCode ?? (await new Promise((resolve) => orphan.once('exit', (_, sig) => resolve(sig))));
    expect(signal).toBe('SIGKILL');
    expect(existsSync(dir)).toBe(false);
  });

  it('the guard removes a reservation file only while it names the owner and was not released', async () => {
    const dir = tempDir();
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = (name: string, owner: number) => {
      const path = join(dir, name);
      writeFileSync(path, String(owner));
      return path;
    };
    // The guard's owner is this process: another process names a port it reclaimed meanwhile.
    const owned = file('owned', process.pid);
    const reclaimed = file('reclaimed', 1);
    const released = file('released', process.pid);
    const guard = spawnGuard();
    guard.stdin!.end(`r\t${owned}\nr\t${reclaimed}\nr\t${released}\nu\t${released}\n`);
    await new Promise((resolve) => guard.once('exit', resolve));
    expect([owned, reclaimed, released].map((path) => existsSync(path))).toEqual([false, true, true]);
  });
});
