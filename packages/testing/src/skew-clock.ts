import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
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

let built: string | undefined;

/**
 * Compiles the shim once per source version into the temporary directory and returns the
 * shared library's path. Throws `SkewClockUnavailableError` without a compiler.
 */
export function buildSkewClock(): string {
  if (built && existsSync(built)) return built;
  const reason = skewClockUnavailable();
  if (reason) throw new SkewClockUnavailableError(reason);
  const version = createHash('sha256').update(skewClockSource).digest('hex').slice(0, 12);
  const library = join(tmpdir(), `lock-testing-skewclock-${version}.so`);
  if (!existsSync(library)) {
    const work = mkdtempSync(join(tmpdir(), 'lock-testing-skewclock-'));
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
      // Another test process may build it at the same time: the rename is atomic.
      renameSync(output, library);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  built = library;
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
