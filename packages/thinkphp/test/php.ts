import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('./php/cli.php', import.meta.url));
const envCli = fileURLToPath(new URL('./php/env.php', import.meta.url));
const predis = '/usr/share/php/Predis/autoload.php';

/** Whether php-cli and Debian's php-predis are installed. */
export const phpAvailable =
  spawnSync('php', ['-r', `require '${predis}'; echo 'ok';`], { encoding: 'utf8' }).stdout === 'ok';

if (!phpAvailable && process.env.CI !== 'true') {
  console.warn('!!! php-cli or php-predis is missing: the @lock/thinkphp PHP interop tests are SKIPPED !!!');
}

/** What `cli.php lock` prints. */
export interface PhpLockResult {
  acquired: boolean;
  error: string | null;
  tries: number;
  /** The messages of the warnings and deprecations PHP raised during `lock()`. */
  notices: string[];
  value: string | null;
  ttl: number;
  time: number;
  /** The key's Redis type (`none` when absent). */
  type: string;
}

/** Arguments every PHP command takes: the redis port, the key, optionally expire and a clock offset (s). */
export interface PhpArgs {
  port: number;
  key: string;
  expire?: number;
  offset?: number;
  /** Ports of Redis Cluster nodes: Predis then runs in its Redis Cluster mode and `port` is unused. */
  cluster?: readonly number[];
  [more: string]: unknown;
}

/** What `cli.php read` prints. */
export interface PhpRead {
  value: string | null;
  ttl: number;
  /** The key's Redis type (`none` when absent). */
  type: string;
  /** PHP's time(). */
  time: number;
  digits: boolean;
  isInt: boolean;
  /** Whether the seed's own comparison (`value > time()`) calls the lock live. */
  liveBySeedCheck: boolean;
  /** The host's wall clock in ms (microtime), read just before `pttl`. */
  mtime: number;
  pttl: number;
}

/** What a PHP process killed by `cli.php crash-after-setnx` printed before it died, and how it died. */
export interface PhpCrash {
  signal: NodeJS.Signals | null;
  setnx: number;
  value: string | null;
  ttl: number;
  time: number;
  type: string;
}

/**
 * Runs `cli.php crash-after-setnx`: SETNX of the seed's value, then the process kills itself
 * with SIGKILL before its EXPIRE. Resolves once it is dead, with what it printed.
 */
export function phpCrashAfterSetnx(args: PhpArgs): Promise<PhpCrash> {
  return new Promise((resolve, reject) => {
    execFile(
      'php',
      [cli, 'crash-after-setnx', JSON.stringify(args)],
      { timeout: 30_000 },
      (error, stdout, stderr) => {
        if (error?.signal !== 'SIGKILL' || error.killed) {
          reject(new Error(`php crash-after-setnx was not killed by itself: ${error?.message}\n${stderr}`));
        } else resolve({ signal: error.signal, ...(JSON.parse(stdout) as Omit<PhpCrash, 'signal'>) });
      },
    );
  });
}

/** Runs `test/php/cli.php <command>` in a php-cli child process and parses its JSON line. */
export function php<T = PhpLockResult>(command: string, args: PhpArgs): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile('php', [cli, command, JSON.stringify(args)], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`php ${command} failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as T);
    });
  });
}

/** What ThinkPHP's `Env` holds after loading each text as a `.env` file, run in php-cli. */
export function phpThinkEnv(texts: readonly string[]): Promise<Record<string, string>[]> {
  return new Promise((resolve, reject) => {
    execFile('php', [envCli, JSON.stringify(texts)], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`php env.php failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as Record<string, string>[]);
    });
  });
}
