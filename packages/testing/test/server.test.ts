import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RedisServerNotFoundError, startMasters, startRedis, waitFor } from '../src/index.js';
import { reservationDir } from '../src/ports.js';
import { useRedis } from '../src/vitest/index.js';
import { alive } from './proc.js';

describe('startRedis', () => {
  it('serves commands on loopback with debug commands enabled and nothing persisted', async () => {
    const server = await useRedis();
    const client = server.client();
    expect(server.host).toBe('127.0.0.1');
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    await client.set('k', 'v');
    expect(await client.get('k')).toBe('v');
    expect(await client.config('GET', 'enable-debug-command')).toEqual(['enable-debug-command', 'local']);
    expect(await client.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
    expect(await client.config('GET', 'save')).toEqual(['save', '']);
  });

  it('gives parallel servers distinct ports and directories', async () => {
    const servers = await Promise.all([useRedis(), useRedis(), useRedis()]);
    expect(new Set(servers.map((server) => server.port)).size).toBe(3);
    expect(new Set(servers.map((server) => server.dir)).size).toBe(3);
  });

  it('applies extra config directives', async () => {
    const server = await useRedis({ config: { 'maxmemory-policy': 'noeviction' } });
    expect(await server.client().config('GET', 'maxmemory-policy')).toEqual([
      'maxmemory-policy',
      'noeviction',
    ]);
  });

  it('stop() kills the process, removes its directory and may be called twice', async () => {
    const server = await startRedis();
    const pid = server.pid!;
    expect(alive(pid)).toBe(true);
    expect(existsSync(server.dir)).toBe(true);
    await server.stop();
    expect(alive(pid)).toBe(false);
    expect(existsSync(server.dir)).toBe(false);
    expect(server.running).toBe(false);
    await server.stop();
  });

  it("a stopped server refuses client() and restart(), naming its port: that port may be another server's now", async () => {
    const server = await startRedis();
    await server.stop();
    expect(() => server.client()).toThrow(`redis-server on port ${server.port} is stopped`);
    await expect(server.restart()).rejects.toThrow(`redis-server on port ${server.port} is stopped`);
    await expect(server.debugSleep(1)).rejects.toThrow(`redis-server on port ${server.port} is stopped`);
    expect(server.running).toBe(false);
  });

  it('await using stops the server at the end of the block', async () => {
    let pid: number;
    {
      await using server = await startRedis();
      pid = server.pid!;
      expect(alive(pid)).toBe(true);
    }
    expect(alive(pid)).toBe(false);
  });
});

describe('fault helpers', () => {
  it('pause() makes commands time out and resume() makes the server answer again', async () => {
    const server = await useRedis();
    const client = server.client({ commandTimeout: 300 });
    expect(await client.ping()).toBe('PONG');
    server.pause();
    await expect(client.ping()).rejects.toThrow(/timed out/i);
    server.resume();
    expect(await client.ping()).toBe('PONG');
  });

  it('kill() ends the process and restart() brings a new one up on the same port', async () => {
    const server = await useRedis();
    const port = server.port;
    const before = server.pid!;
    await server.client().set('k', 'v');
    await server.kill();
    expect(server.running).toBe(false);
    expect(alive(before)).toBe(false);
    await server.restart();
    expect(server.port).toBe(port);
    expect(server.pid).not.toBe(before);
    const client = server.client();
    expect(await client.ping()).toBe('PONG');
    // No persistence by default: a restart starts empty.
    expect(await client.get('k')).toBeNull();
  });

  it('restart() keeps the data when persistence is on', async () => {
    const server = await useRedis({ persistence: true });
    await server.client().set('k', 'kept');
    await server.restart();
    expect(await server.client().get('k')).toBe('kept');
  });

  it('paused follows pause(), resume(), restart() and kill()', async () => {
    const server = await useRedis();
    expect(server.paused).toBe(false);
    server.pause();
    expect({ paused: server.paused, running: server.running }).toEqual({ paused: true, running: true });
    server.resume();
    expect(server.paused).toBe(false);
    server.pause();
    await server.restart();
    expect(server.paused).toBe(false);
    server.pause();
    await server.kill();
    expect(server.paused).toBe(false);
  });

  it('kill() refuses a signal that does not end redis-server, naming it', {
    // Before the check, kill('SIGHUP') waited forever for an exit that never came.
    timeout: 10_000,
  }, async () => {
    const server = await useRedis();
    await expect(server.kill('SIGHUP' as 'SIGTERM')).rejects.toThrow(
      new RangeError('signal must be SIGKILL, SIGTERM or SIGINT, got SIGHUP'),
    );
    expect(server.running).toBe(true);
    await server.kill('SIGTERM');
    expect(server.running).toBe(false);
  });

  it('kill() also ends a paused server', async () => {
    const server = await useRedis();
    const pid = server.pid!;
    server.pause();
    await server.kill();
    expect(alive(pid)).toBe(false);
  });

  it('debugSleep() refuses a negative or non-finite duration, naming it', async () => {
    const server = await useRedis();
    await expect(server.debugSleep(-1)).rejects.toThrow(
      new RangeError('ms must be a finite number >= 0, got -1'),
    );
    await expect(server.debugSleep(Number.POSITIVE_INFINITY)).rejects.toThrow('got Infinity');
  });

  it('refuses a start timeout that is not a positive integer, naming it', async () => {
    await expect(startRedis({ startTimeout: 0 })).rejects.toThrow(
      'startTimeout must be an integer >= 1, got 0',
    );
  });

  it('stop() while restart() waits for the old process makes restart() reject as stopped', async () => {
    const server = await useRedis();
    const pid = server.pid!;
    const restarting = server.restart();
    await server.stop();
    await expect(restarting).rejects.toThrow(`redis-server on port ${server.port} is stopped`);
    expect(alive(pid)).toBe(false);
    expect(server.running).toBe(false);
  });

  it('pause() on a killed server throws naming the port', async () => {
    const server = await useRedis();
    await server.kill();
    expect(() => server.pause()).toThrow(`redis-server on port ${server.port} is not running`);
  });

  it('debugSleep() blocks every client until the sleep ends', async () => {
    const server = await useRedis();
    const probe = server.client({ commandTimeout: 100 });
    expect(await probe.ping()).toBe('PONG');
    let slept = false;
    const sleeping = server.debugSleep(2_000).then(() => {
      slept = true;
    });
    // The 2 s sleep leaves a wide margin to observe a probe timing out.
    await waitFor('a PING to time out', () =>
      probe.ping().then(
        () => false,
        () => true,
      ),
    );
    expect(slept).toBe(false);
    await sleeping;
    expect(await server.client().ping()).toBe('PONG');
  });
});

describe('a missing redis-server', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('REDIS_SERVER_BIN naming a missing file fails with one line naming the path', async () => {
    vi.stubEnv('REDIS_SERVER_BIN', '/nonexistent/redis-server');
    const failure = startRedis();
    await expect(failure).rejects.toBeInstanceOf(RedisServerNotFoundError);
    await expect(failure).rejects.toThrow(
      /^redis-server not found at REDIS_SERVER_BIN=\/nonexistent\/redis-server: install/,
    );
    await expect(failure).rejects.toThrow(/^[^\n]+$/);
  });

  it('REDIS_SERVER_BIN naming a directory fails the same way', async () => {
    vi.stubEnv('REDIS_SERVER_BIN', tmpdir());
    const failure = startRedis();
    await expect(failure).rejects.toBeInstanceOf(RedisServerNotFoundError);
    await expect(failure).rejects.toThrow(`redis-server not found at REDIS_SERVER_BIN=${tmpdir()}: install`);
  });

  it('no redis-server on PATH fails with one line saying how to install it', async () => {
    vi.stubEnv('REDIS_SERVER_BIN', '');
    vi.stubEnv('PATH', '/nonexistent');
    const failure = startRedis();
    await expect(failure).rejects.toThrow(
      /^redis-server not found on PATH: install it .*apt-get install -y redis-server[^\n]*$/,
    );
  });
});

describe('a server that is not ready within its start timeout', () => {
  let fakes: string | undefined;
  afterEach(() => {
    vi.unstubAllEnvs();
    if (fakes) rmSync(fakes, { recursive: true, force: true });
    fakes = undefined;
  });

  /**
   * A `redis-server` that never prints its ready line: it records its pid (one line per process)
   * and sleeps, until the harness kills it.
   */
  function neverReady(): { pids: () => number[] } {
    fakes = mkdtempSync(join(tmpdir(), 'lock-testing-fake-'));
    const pidFile = join(fakes, 'pids');
    const bin = join(fakes, 'redis-server');
    writeFileSync(bin, `#!/bin/sh\necho "fake redis-server $*"\necho $$ >> '${pidFile}'\nexec sleep 600\n`, {
      mode: 0o755,
    });
    vi.stubEnv('REDIS_SERVER_BIN', bin);
    return { pids: () => readFileSync(pidFile, 'utf8').trim().split('\n').map(Number) };
  }

  // Reaped, not merely dead: only once Node has reaped the process (its 'exit' event) is it
  // certain to hold nothing, and a zombie found here means the harness did not wait for that.
  const reaped = (pid: number) => !existsSync(`/proc/${pid}`);

  it('startRedis() rejects only after the killed process exited, then frees its port, naming port and timeout', async () => {
    const fake = neverReady();
    const error = await rejection(startRedis({ startTimeout: 1_000 }));
    const [pid] = fake.pids();
    expect({ pid, reaped: reaped(pid!) }).toEqual({ pid, reaped: true });
    expect(error.message).toMatch(
      /^redis-server on port \d+ was not ready within 1000 ms; killed it:\nfake redis-server /,
    );
    const port = /port (\d+)/.exec(error.message)![1]!;
    expect(error.message).toContain(`--port ${port} `);
    expect(existsSync(join(reservationDir(), port))).toBe(false);
  });

  it('startMasters() rejects only after every killed process exited', async () => {
    const fake = neverReady();
    const error = await rejection(startMasters(2, { startTimeout: 1_000 }));
    const pids = fake.pids();
    expect(pids).toHaveLength(2);
    expect(pids.filter((pid) => !reaped(pid))).toEqual([]);
    expect(error.message).toMatch(/^redis-server on port \d+ was not ready within 1000 ms; killed it:/);
  });

  it('restart() rejects only after the killed process exited, and the server is then not running', async () => {
    const server = await useRedis({ startTimeout: 3_000 });
    const fake = neverReady();
    const error = await rejection(server.restart());
    const [pid] = fake.pids();
    expect({ running: server.running, reaped: reaped(pid!) }).toEqual({ running: false, reaped: true });
    expect(error.message).toMatch(
      new RegExp(`^redis-server on port ${server.port} was not ready within 3000 ms; killed it:\n`),
    );
    // The port stays reserved for the next restart, which works again with the real binary.
    expect(existsSync(join(reservationDir(), String(server.port)))).toBe(true);
    vi.unstubAllEnvs();
    await server.restart();
    expect(await server.client().ping()).toBe('PONG');
  });
});

/** The error `promise` rejects with; fails if it resolves. */
function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection, but the promise resolved');
    },
    (error: Error) => error,
  );
}
