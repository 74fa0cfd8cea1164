import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { redisServerBinary } from './binary.js';
import { freePort } from './ports.js';
import { trackProcess, untrackProcess } from './registry.js';

/** Options of one redis-server process. */
export interface RedisServerOptions {
  /** Extra redis.conf directives passed on the command line, e.g. `{ 'maxmemory-policy': 'noeviction' }`. Default: none. */
  config?: Record<string, string | number>;
  /** Keep an append-only file so `restart()` finds the data again. Default: `false` (nothing on disk). */
  persistence?: boolean;
  /** Run as a sentinel (`redis-server --sentinel`); `config` then holds sentinel directives. Default: `false`. */
  sentinel?: boolean;
  /** Milliseconds to wait for "Ready to accept connections". Default: `10_000`. */
  startTimeout?: number;
}

const readyLine = /Ready to accept connections|Sentinel ID is/;
const portTaken = /Address already in use|bind: /i;

/** A redis-server process this library started, on 127.0.0.1 and a free port. */
export class RedisServer {
  readonly host = '127.0.0.1';
  private child: ChildProcess | undefined;
  private readonly clients = new Set<Redis>();

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  /** Starts a server on a free loopback port, retrying with another port if one is taken meanwhile. */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const binary = redisServerBinary();
    for (let attempt = 0; ; attempt++) {
      const dir = mkdtempSync(join(tmpdir(), 'lock-testing-'));
      const server = new RedisServer(await freePort(), dir, options);
      try {
        await server.spawn(binary);
        return server;
      } catch (error) {
        rmSync(dir, { recursive: true, force: true });
        if (!(error instanceof PortTakenError) || attempt >= 10) throw error;
      }
    }
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  /** ioredis options that reach this server. */
  get redisOptions(): RedisOptions {
    return { host: this.host, port: this.port };
  }

  /** A new ioredis client for this server; `stop()` disconnects it. */
  client(options: RedisOptions = {}): Redis {
    const client = new Redis({ ...this.redisOptions, ...options });
    client.on('error', () => {});
    this.clients.add(client);
    client.once('end', () => this.clients.delete(client));
    return client;
  }

  /** Freezes the process (SIGSTOP): it keeps its sockets but answers nothing. */
  pause(): void {
    this.signal('SIGSTOP');
  }

  /** Thaws a paused process (SIGCONT). */
  resume(): void {
    this.signal('SIGCONT');
  }

  /** Makes the server sleep inside one command (`DEBUG SLEEP`), blocking every client. */
  async debugSleep(ms: number): Promise<void> {
    const client = this.client();
    try {
      await client.call('DEBUG', 'SLEEP', String(ms / 1000));
    } finally {
      client.disconnect();
    }
  }

  /** Kills the process (SIGKILL by default) and waits until it has exited. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGCONT');
    child.kill(signal);
    await exited;
  }

  /** Kills the process and starts a new one on the same port and directory. */
  async restart(): Promise<void> {
    await this.kill();
    await this.spawn(redisServerBinary());
  }

  /** Disconnects the clients it made, stops the process and removes its directory. */
  async stop(): Promise<void> {
    for (const client of this.clients) client.disconnect();
    this.clients.clear();
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private signal(signal: NodeJS.Signals): void {
    if (!this.child?.pid) throw new Error(`redis-server on port ${this.port} is not running`);
    this.child.kill(signal);
  }

  private args(): string[] {
    const persistence = this.options.persistence ?? false;
    const base: Record<string, string | number> = this.options.sentinel
      ? { port: this.port, bind: this.host, dir: this.dir, logfile: '""' }
      : {
          port: this.port,
          bind: this.host,
          dir: this.dir,
          save: '""',
          appendonly: persistence ? 'yes' : 'no',
          appendfsync: 'always',
          'enable-debug-command': 'local',
          'repl-diskless-sync-delay': 0,
          logfile: '""',
        };
    const config = { ...base, ...this.options.config };
    const args = this.options.sentinel ? [join(this.dir, 'sentinel.conf'), '--sentinel'] : [];
    for (const [name, value] of Object.entries(config)) {
      args.push(`--${name}`, ...String(value).split(' ').map((part) => (part === '""' ? '' : part)));
    }
    return args;
  }

  private async spawn(binary: string): Promise<void> {
    if (this.options.sentinel) await writeEmptySentinelConfig(this.dir);
    const child = spawn(binary, this.args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    if (child.pid) trackProcess(child.pid, this.dir);
    child.once('exit', () => {
      if (child.pid) untrackProcess(child.pid);
    });
    await new Promise<void>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`redis-server on port ${this.port} did not start in time:\n${output}`));
      }, this.options.startTimeout ?? 10_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (readyLine.test(output)) {
          clearTimeout(timer);
          child.stdout?.off('data', onData);
          child.stdout?.resume();
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        if (portTaken.test(output)) reject(new PortTakenError(output));
        else reject(new Error(`redis-server exited with code ${code} before it was ready:\n${output}`));
      });
    });
  }
}

class PortTakenError extends Error {}

async function writeEmptySentinelConfig(dir: string): Promise<void> {
  const { writeFile } = await import('node:fs/promises');
  await writeFile(join(dir, 'sentinel.conf'), '', { flag: 'a' });
}

/** Starts one redis-server on a free loopback port. */
export function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  return RedisServer.start(options);
}
