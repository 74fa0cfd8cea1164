import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { redisServerBinary } from './binary.js';
import { OwnedClients } from './clients.js';
import { releasePort, reservePort } from './ports.js';
import { trackProcess, untrackProcess } from './registry.js';
import { checkInteger } from './validate.js';

/** Options of one redis-server process. */
export interface RedisServerOptions {
  /**
   * Extra redis.conf directives, e.g. `{ 'maxmemory-policy': 'noeviction' }`; for a sentinel,
   * sentinel directives such as `{ 'sentinel monitor': 'mymaster 127.0.0.1 6379 2' }`.
   * Default: none.
   */
  config?: Record<string, string | number>;
  /** Keep an append-only file so `restart()` finds the data again. Default: `false` (nothing on disk). */
  persistence?: boolean;
  /** Run as a sentinel (`redis-server <file> --sentinel`). Default: `false`. */
  sentinel?: boolean;
  /** Milliseconds to wait for "Ready to accept connections". Default: `10_000`. */
  startTimeout?: number;
  /**
   * Extra environment variables of the process, e.g. a `SkewClock`'s `env` to run its wall clock
   * ahead or behind. Default: none (the test process's environment as is).
   */
  env?: Readonly<Record<string, string>>;
}

/** A host and port, as ioredis wants sentinel addresses and cluster startup nodes. */
export interface Address {
  host: string;
  port: number;
}

const readyLine = /Ready to accept connections|Sentinel ID is/;
const portTaken = /Address already in use/i;
const killSignals: readonly string[] = ['SIGKILL', 'SIGTERM', 'SIGINT'];
/**
 * How long a start that timed out waits for the killed process's exit before rejecting anyway
 * (a process in uninterruptible sleep outlives SIGKILL); its port and directory are then
 * released only when it exits.
 */
const exitWait = 5_000;

/**
 * A server could not bind its port: `restart()` throws it when something outside this library
 * took the port while the server was down (`startRedis` retries on another port instead).
 */
export class PortTakenError extends Error {
  override readonly name = 'PortTakenError';
  constructor(
    readonly port: number,
    output: string,
  ) {
    super(`port ${port} is taken:\n${output}`);
  }
}

/** A redis-server process this library started, on 127.0.0.1 and a free port, in its own temporary directory. */
export class RedisServer {
  readonly host = '127.0.0.1';
  private child: ChildProcess | undefined;
  private pausedChild: ChildProcess | undefined;
  private stopped = false;
  private readonly clients = new OwnedClients();

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly options: RedisServerOptions,
  ) {}

  /**
   * Starts a server on a free loopback port, retrying with another port if one is taken
   * meanwhile. The port stays reserved until `stop()`, also while the server is killed.
   */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    if (options.startTimeout !== undefined) checkInteger('startTimeout', options.startTimeout, 1);
    const binary = redisServerBinary();
    for (let attempt = 0; ; attempt++) {
      // The port first: a reservation that fails must leave no directory behind.
      const port = await reservePort();
      let dir: string;
      try {
        // In the real path of the temporary directory, because the guard compares the server's
        // directory with /proc/<pid>/cwd.
        dir = mkdtempSync(join(realpathSync(tmpdir()), 'lock-testing-'));
      } catch (error) {
        releasePort(port);
        throw error;
      }
      // `this`, not its name: the bundler renames a class whose body names it (`_RedisServer`).
      const server = new this(port, dir, options);
      try {
        await server.spawn(binary);
        return server;
      } catch (error) {
        server.release();
        if (!(error instanceof PortTakenError) || attempt >= 10) throw error;
      }
    }
  }

  /** The pid of the running process, `undefined` once it has exited. */
  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  /** Whether the process is alive (paused counts as alive: see `paused`). */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Whether the process is alive but frozen by `pause()`: it holds its sockets and answers nothing. */
  get paused(): boolean {
    return this.running && this.pausedChild === this.child;
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  /** ioredis options that reach this server. */
  get redisOptions(): RedisOptions {
    return { host: this.host, port: this.port };
  }

  /** A new ioredis client for this server; `stop()` disconnects it. Throws once stopped. */
  client(options: RedisOptions = {}): Redis {
    this.checkNotStopped();
    return this.clients.add(new Redis({ ...this.redisOptions, ...options }));
  }

  /** Freezes the process (SIGSTOP): it keeps its sockets but answers nothing. */
  pause(): void {
    this.signal('SIGSTOP');
    this.pausedChild = this.child;
  }

  /** Thaws a paused process (SIGCONT). */
  resume(): void {
    this.signal('SIGCONT');
    this.pausedChild = undefined;
  }

  /** Makes the server sleep inside one command (`DEBUG SLEEP`), blocking every client for `ms`. */
  async debugSleep(ms: number): Promise<void> {
    if (!(ms >= 0 && Number.isFinite(ms))) throw new RangeError(`ms must be a finite number >= 0, got ${ms}`);
    const client = this.client();
    try {
      await client.call('DEBUG', 'SLEEP', String(ms / 1000));
    } finally {
      client.disconnect();
    }
  }

  /**
   * Kills the process (SIGKILL by default, a paused one too) and waits until it has exited. Only
   * signals that end redis-server are taken: after any other (SIGHUP, SIGUSR1) it runs on and the
   * wait would never end.
   */
  async kill(signal: 'SIGKILL' | 'SIGTERM' | 'SIGINT' = 'SIGKILL'): Promise<void> {
    if (!killSignals.includes(signal)) {
      throw new RangeError(`signal must be SIGKILL, SIGTERM or SIGINT, got ${String(signal)}`);
    }
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGCONT');
    child.kill(signal);
    await exited;
  }

  /**
   * Kills the process and starts a new one on the same port and directory. Rejects with
   * `PortTakenError` when a process outside this library took the port meanwhile.
   */
  async restart(): Promise<void> {
    this.checkNotStopped();
    await this.kill();
    // A stop() that came while the old process was exiting is removing the directory and
    // releasing the port: a new process there would start in a directory that is going away.
    this.checkNotStopped();
    await this.spawn(redisServerBinary());
  }

  /**
   * Disconnects the clients it made, kills the process, removes its directory and releases its
   * port; `client()` and `restart()` throw from then on. Idempotent.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clients.disconnectAll();
    await this.kill();
    this.release();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Removes the directory and releases the port once the process is gone: until then it may
   * still write there and hold the port, which another server could otherwise be given.
   */
  private release(): void {
    const child = this.child;
    if (child && this.running) {
      child.once('exit', () => this.release());
      return;
    }
    rmSync(this.dir, { recursive: true, force: true });
    releasePort(this.port);
  }

  /**
   * A stopped server's port is released and its directory gone: a client would reconnect
   * forever or reach the next server given that port, and a restart would run without either.
   */
  private checkNotStopped(): void {
    if (this.stopped) throw new Error(`redis-server on port ${this.port} is stopped`);
  }

  private signal(signal: NodeJS.Signals): void {
    if (!this.running) throw new Error(`redis-server on port ${this.port} is not running`);
    this.child?.kill(signal);
  }

  private args(): string[] {
    const common = { port: this.port, bind: this.host, dir: this.dir, logfile: '""' };
    if (this.options.sentinel) return [join(this.dir, 'sentinel.conf'), '--sentinel', ...flags(common)];
    return flags({
      ...common,
      save: '""',
      appendonly: this.options.persistence ? 'yes' : 'no',
      appendfsync: 'always',
      'enable-debug-command': 'local',
      'repl-diskless-sync-delay': 0,
      ...this.options.config,
    });
  }

  private async spawn(binary: string): Promise<void> {
    // A sentinel rewrites its own file, so its directives go there once, not on every start.
    if (this.options.sentinel) writeSentinelConfig(this.dir, this.options.config ?? {});
    const env = this.options.env ? { ...process.env, ...this.options.env } : process.env;
    const child = spawn(binary, this.args(), { stdio: ['ignore', 'pipe', 'pipe'], env });
    this.child = child;
    const pid = child.pid;
    if (pid) {
      trackProcess(pid, this.dir);
      child.once('exit', () => untrackProcess(pid));
    }
    const startTimeout = this.options.startTimeout ?? 10_000;
    await new Promise<void>((resolve, reject) => {
      let output = '';
      let killed = false;
      let exitTimer: NodeJS.Timeout | undefined;
      const notReady = (detail: string) =>
        new Error(
          `redis-server on port ${this.port} was not ready within ${startTimeout} ms; ${detail}:\n${output}`,
        );
      // Settled by the exit, not here: on a rejection the caller releases the port and removes
      // the directory, which must wait until the process is gone.
      const timer = setTimeout(() => {
        killed = true;
        child.kill('SIGKILL');
        exitTimer = setTimeout(
          () => reject(notReady(`killed it, but it had not exited ${exitWait} ms later`)),
          exitWait,
        );
      }, startTimeout);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        // A ready line that comes after the kill is from a process about to die.
        if (killed || !readyLine.test(output)) return;
        clearTimeout(timer);
        for (const stream of [child.stdout, child.stderr]) stream?.off('data', onData).resume();
        resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', (error) => {
        clearTimeout(timer);
        reject(new Error(`redis-server could not be started from ${binary}: ${error.message}`));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        clearTimeout(exitTimer);
        if (killed) reject(notReady('killed it'));
        else if (portTaken.test(output)) reject(new PortTakenError(this.port, output));
        else reject(new Error(`redis-server exited (${signal ?? code}) before it was ready:\n${output}`));
      });
    });
  }
}

/** Command-line flags from directives; `""` stands for an empty argument. */
function flags(config: Record<string, string | number>): string[] {
  return Object.entries(config).flatMap(([name, value]) => [
    `--${name}`,
    ...String(value)
      .split(' ')
      .map((part) => (part === '""' ? '' : part)),
  ]);
}

function writeSentinelConfig(dir: string, config: Record<string, string | number>): void {
  const lines = Object.entries(config).map(([name, value]) => `${name} ${value}\n`);
  // `wx`: keep the file a sentinel already rewrote when it is restarted.
  try {
    writeFileSync(join(dir, 'sentinel.conf'), lines.join(''), { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Starts one redis-server on a free loopback port. */
export function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  return RedisServer.start(options);
}
