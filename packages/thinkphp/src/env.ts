import { readFileSync } from 'node:fs';
import { LockError } from '@lock/core';

/** A ThinkPHP `.env` file that cannot be read as ThinkPHP reads it. */
export class ThinkEnvError extends LockError {
  override name = 'ThinkEnvError';
  constructor(
    readonly path: string,
    readonly line: number,
    readonly text: string,
  ) {
    super(
      'ERR_THINK_ENV',
      `${path}:${line}: expected "KEY = value" or "[SECTION]", got ${JSON.stringify(text)}`,
    );
  }
}

/** ThinkPHP turns these raw strings into booleans on `Env::get`. */
const CONVERTED: Readonly<Record<string, boolean>> = { true: true, false: false, on: true, off: false };

/**
 * Settings read the way ThinkPHP 6's `Env` reads them: `get('redis.host')` looks up
 * `REDIS_HOST`, which is `HOST` in a `[REDIS]` section or a top-level `REDIS_HOST`; names are
 * case-insensitive; `true`/`false`/`on`/`off` become booleans; a name missing from the file
 * falls back to the process environment variable `PHP_<NAME>`, as ThinkPHP does.
 */
export class ThinkEnv {
  constructor(
    private readonly values: ReadonlyMap<string, string>,
    private readonly processEnv: NodeJS.ProcessEnv = process.env,
  ) {}

  get(name: string): string | boolean | undefined;
  get<T>(name: string, fallback: T): string | boolean | T;
  get<T>(name: string, fallback?: T): string | boolean | T | undefined {
    const key = name.replaceAll('.', '_').toUpperCase();
    const raw = this.values.get(key) ?? this.processEnv[`PHP_${key}`];
    if (raw === undefined) return fallback;
    return CONVERTED[raw] ?? raw;
  }
}

/**
 * Parses a ThinkPHP `.env` (INI with sections, read raw: values are strings, surrounding quotes
 * are dropped, `;` and `#` start comment lines).
 */
export function parseThinkEnv(text: string, path = '.env', processEnv?: NodeJS.ProcessEnv): ThinkEnv {
  const values = new Map<string, string>();
  let section = '';
  text.split(/\r?\n/).forEach((rawLine, index) => {
    const line = rawLine.trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#')) return;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header) {
      section = `${header[1]!.trim().toUpperCase()}_`;
      return;
    }
    const equals = line.indexOf('=');
    const name = equals > 0 ? line.slice(0, equals).trim() : '';
    if (name === '') throw new ThinkEnvError(path, index + 1, rawLine);
    values.set(section + name.toUpperCase(), unquote(line.slice(equals + 1).trim()));
  });
  return new ThinkEnv(values, processEnv);
}

/** Reads a ThinkPHP `.env` file, e.g. `loadThinkEnv('.env').get('redis.host')`. */
export function loadThinkEnv(path: string, processEnv?: NodeJS.ProcessEnv): ThinkEnv {
  return parseThinkEnv(readFileSync(path, 'utf8'), path, processEnv);
}

function unquote(value: string): string {
  const quote = value[0];
  if ((quote === '"' || quote === "'") && value.length >= 2 && value.endsWith(quote))
    return value.slice(1, -1);
  return value;
}
