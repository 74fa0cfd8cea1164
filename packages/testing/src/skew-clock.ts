import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, lstatSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { privateDir } from './private-dir.js';
import { skewClockSource } from './skew-clock-source.js';

/** Thrown when the shim cannot be built: no C compiler, or it failed; the message says which. */
export class SkewClockUnavailableError extends Error {
  override readonly name = 'SkewClockUnavailableError';
}

/** The C compiler used: `$CC`, else `cc` on PATH; undefined when there is none. */
function compiler(): string | undefined {
  const wanted = process.env.CC || 'cc';
  try {
    return execFileSync('/bin/sh', ['-c', `command -v "${wanted.replace(/"/g, '')}"`], {
      encoding: 'utf8',
    }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Why the clock-skew shim cannot be used here (one line, to print when skipping), or undefined
 * when it can: it needs Linux and a C compiler.
 */
export function skewClockUnavailable(): string | undefined {
  if (process.platform !== 'linux')
    return `the clock-skew shim needs Linux (LD_PRELOAD), not ${process.platform}`;
  if (!compiler()) {
    return `no C compiler (${process.env.CC || 'cc'}) on PATH to build the clock-skew shim: install one (Debian/Ubuntu: \`apt-get install -y gcc\`) or set CC`;
  }
  return undefined;
}

let version: string | undefined;

/**
 * Where this user's builds of the shim live: `<tmpdir>/lock-testing-<uid>`, made or checked (a
 * directory of this user, mode 0700) on every call, as the port reservations' directory is. A
 * shared name would let anyone put a library there for redis-server to load.
 */
function shimDir(): string {
  return privateDir(
    join(tmpdir(), `lock-testing-${process.getuid?.() ?? userInfo().username}`),
    'the clock-skew shim needs',
  );
}

const elfMagic = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

/**
 * Whether `library` is a build to load: a regular file of this user that nobody else may write,
 * and a shared object (`\x7fELF`) at least. Anything else found there is built over.
 */
function usable(library: string): boolean {
  try {
    const found = lstatSync(library);
    const uid = process.getuid?.();
    if (!found.isFile() || (uid !== undefined && found.uid !== uid) || found.mode & 0o022) return false;
    return readFileSync(library).subarray(0, 4).equals(elfMagic);
  } catch {
    return false;
  }
}

/**
 * Compiles the shim once per source version into this user's private directory
 * (`<tmpdir>/lock-testing-<uid>/skewclock-<version>.so`) and returns the shared library's path.
 * Throws `SkewClockUnavailableError` without a compiler, and an `Error` naming the directory when
 * that name is taken by something not this user's.
 */
export function buildSkewClock(): string {
  version ??= createHash('sha256').update(skewClockSource).digest('hex').slice(0, 12);
  const dir = shimDir();
  const library = join(dir, `skewclock-${version}.so`);
  if (usable(library)) return library;
  const reason = skewClockUnavailable();
  if (reason) throw new SkewClockUnavailableError(reason);
  // Built under a name of its own, then renamed into place (atomic, in the same directory): a
  // process building or loading it at the same time never sees half a file.
  const work = mkdtempSync(join(dir, 'build-'));
  try {
    const source = join(work, 'skewclock.c');
    writeFileSync(source, skewClockSource);
    const output = join(work, 'skewclock.so');
    try {
      execFileSync(compiler()!, ['-O2', '-shared', '-fPIC', '-o', output, source], { stdio: 'pipe' });
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? String(error);
      throw new SkewClockUnavailableError(`building the clock-skew shim failed: ${stderr}`);
    }
    // Whatever the umask: a group-writable build would not pass `usable` next time.
    chmodSync(output, 0o700);
    renameSync(output, library);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return library;
}

/**
 * A wall-clock offset for the processes started with `env` (e.g. `startRedis({ env: clock.env })`):
 * their CLOCK_REALTIME runs `ms` ahead (negative: behind). `set()` moves it at run time.
 */
export interface SkewClock {
  /** `LD_PRELOAD` and `SKEW_FILE` for the process to skew. */
  readonly env: Readonly<Record<string, string>>;
  /** The current offset in ms. */
  readonly offset: number;
  /** Moves the offset (the process sees it within about 20 ms). */
  set(ms: number): void;
  /** Removes the offset file. Idempotent. */
  remove(): void;
}

/** Builds the shim if needed and makes an offset file holding `ms` (default 0). */
export function createSkewClock(ms = 0): SkewClock {
  checkOffset(ms);
  const library = buildSkewClock();
  const dir = mkdtempSync(join(tmpdir(), 'lock-testing-skew-'));
  const file = join(dir, 'offset');
  let offset = 0;
  const set = (next: number) => {
    checkOffset(next);
    // Write then rename, so the shim never reads half a number.
    writeFileSync(`${file}.next`, String(next));
    renameSync(`${file}.next`, file);
    offset = next;
  };
  set(ms);
  return {
    env: { LD_PRELOAD: library, SKEW_FILE: file },
    get offset() {
      return offset;
    },
    set,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function checkOffset(ms: number): void {
  if (!Number.isInteger(ms)) throw new RangeError(`the clock offset must be an integer of ms, got ${ms}`);
}

/** The server's wall clock (`TIME`) minus this process's, in ms: what a skew monitor would see. */
export async function serverClockOffset(redis: Redis): Promise<number> {
  const before = Date.now();
  const [seconds, micros] = (await redis.time()) as [string | number, string | number];
  const after = Date.now();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - (before + after) / 2;
}
