import { spawn, spawnSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { freePort, PortTakenError, startRedis } from '../src/index.js';
import { portRange, reservationDir } from '../src/ports.js';
import { useRedis } from '../src/vitest/index.js';

const register = fileURLToPath(new URL('../../../tooling/register.mjs', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/free-port.ts', import.meta.url));
const owner = fileURLToPath(new URL('./fixtures/owner.ts', import.meta.url));
const reservations = reservationDir();

/** The Math.random() value that makes a draw of `freePort` land on `port`. */
function drawOf(port: number): number {
  const { low, high } = portRange();
  return (port - low + 0.5) / (high - low);
}

/** `freePort()` in another process, its first draw steered to `port`. */
async function freePortElsewhere(port: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', register, fixture, String(drawOf(port))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`free-port fixture exited with ${code}`);
  return Number(output);
}

/** Runs the owner fixture (one server started, then an exit) with `TMPDIR` set to `dir`. */
async function startServerIn(dir: string): Promise<{ code: unknown; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', register, owner, 'exit'], {
    env: { ...process.env, TMPDIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output.stderr += chunk.toString();
  });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  return { code, ...output };
}

function tempDir(onTestFinished: (fn: () => void) => void): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'lock-testing-tmp-')));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Steers the next draws of this process's `freePort`, and restores Math.random after the test. */
function steer(onTestFinished: (fn: () => void) => void, ...ports: number[]) {
  const random = vi.spyOn(Math, 'random');
  onTestFinished(() => random.mockRestore());
  for (const port of ports) random.mockReturnValueOnce(drawOf(port));
}

describe('port reservations', () => {
  it('a killed server keeps its port until stop(), in this process and in others', async ({
    onTestFinished,
  }) => {
    const server = await useRedis();
    await server.kill();
    // Controls: the steering reaches a port nobody reserved, here and in the other process.
    const free = await freePort();
    steer(onTestFinished, free);
    expect(await freePort()).toBe(free);
    expect(await freePortElsewhere(free)).toBe(free);
    steer(onTestFinished, server.port);
    expect(await freePort()).not.toBe(server.port);
    expect(await freePortElsewhere(server.port)).not.toBe(server.port);
    await server.restart();
    expect(await server.client().ping()).toBe('PONG');
    await server.stop();
    expect(await freePortElsewhere(server.port)).toBe(server.port);
  });

  it('a reservation of a dead process is reclaimed, one of a live process is kept', async ({
    onTestFinished,
  }) => {
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid;
    const sleeper = spawn('sleep', ['30']);
    onTestFinished(() => {
      sleeper.kill('SIGKILL');
    });
    const [stale, kept] = [await freePort(), await freePort()];
    mkdirSync(reservations, { recursive: true });
    writeFileSync(join(reservations, String(stale)), String(deadPid));
    writeFileSync(join(reservations, String(kept)), String(sleeper.pid));
    onTestFinished(() => rmSync(join(reservations, String(kept)), { force: true }));
    // The first draw removes the stale file, the second takes the port.
    steer(onTestFinished, stale, stale);
    const reclaimed = await startRedis();
    onTestFinished(() => reclaimed.stop());
    expect(reclaimed.port).toBe(stale);
    expect(readFileSync(join(reservations, String(stale)), 'utf8')).toBe(String(process.pid));
    steer(onTestFinished, kept);
    const other = await startRedis();
    onTestFinished(() => other.stop());
    expect(other.port).not.toBe(kept);
    expect(readFileSync(join(reservations, String(kept)), 'utf8')).toBe(String(sleeper.pid));
  });

  it('servers start when the shared reservation name is taken by something this user cannot write in', async ({
    onTestFinished,
  }) => {
    const dir = tempDir(onTestFinished);
    // Another user's directory refuses our files (EACCES); a file refuses them even to root.
    writeFileSync(join(dir, 'lock-testing-ports'), '');
    const { code, stdout, stderr } = await startServerIn(dir);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ port: expect.any(Number) });
  });

  it('reservations live in a directory of their own per user, and a squatted one is named in the error', async ({
    onTestFinished,
  }) => {
    expect(reservationDir()).toBe(join(tmpdir(), `lock-testing-ports-${process.getuid!()}`));
    const dir = tempDir(onTestFinished);
    const squatted = join(dir, `lock-testing-ports-${process.getuid!()}`);
    writeFileSync(squatted, '');
    const { code, stderr } = await startServerIn(dir);
    expect(code).not.toBe(0);
    expect(stderr).toContain(
      `port reservations need a directory owned by this user at ${squatted}, but it is not a directory: remove it`,
    );
  });

  it('a start whose port reservation fails leaves no directory behind', async ({ onTestFinished }) => {
    const dir = tempDir(onTestFinished);
    const squatted = `lock-testing-ports-${process.getuid!()}`;
    writeFileSync(join(dir, squatted), '');
    const { code, stderr } = await startServerIn(dir);
    expect(code).not.toBe(0);
    expect(stderr).toContain('port reservations need a directory owned by this user');
    // tsx, which runs the fixture, keeps its cache there too.
    expect(readdirSync(dir).filter((name) => name.startsWith('lock-testing-'))).toEqual([squatted]);
  });

  it('restart() rejects with PortTakenError naming the port when another process took it', async ({
    onTestFinished,
  }) => {
    const server = await useRedis();
    await server.kill();
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(server.port, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => squatter.close(() => resolve())));
    const failure = server.restart();
    await expect(failure).rejects.toBeInstanceOf(PortTakenError);
    await expect(failure).rejects.toMatchObject({ name: 'PortTakenError', port: server.port });
  });
});
