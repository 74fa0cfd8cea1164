import { readFileSync } from 'node:fs';
import { InvalidOptionError, LockError } from '@lock/core';

/** A ThinkPHP `.env` file that cannot be read as ThinkPHP reads it. */
export class ThinkEnvError extends LockError {
  override name = 'ThinkEnvError';
  constructor(
    readonly path: string,
    readonly line: number,
    readonly text: string,
    problem = 'expected "KEY = value" or "[SECTION]"',
  ) {
    super('ERR_THINK_ENV', `${path}:${line}: ${problem}, got ${JSON.stringify(text)}`);
  }
}

/** ThinkPHP turns these raw strings of the file into booleans on `Env::get`. */
const CONVERTED: ReadonlyMap<string, boolean> = new Map([
  ['true', true],
  ['false', false],
  ['on', true],
  ['off', false],
]);

/**
 * Settings read the way ThinkPHP 6's `Env` reads them: `get('redis.host')` looks up
 * `REDIS_HOST`, which is `HOST` in a `[REDIS]` section or a top-level `REDIS_HOST`; names are
 * case-insensitive; `true`/`false`/`on`/`off` in the file become booleans; a name missing from
 * the file falls back to the process environment variable `PHP_<NAME>`, whose `true` and `false`
 * only become booleans, as ThinkPHP does.
 */
export class ThinkEnv {
  constructor(
    private readonly values: ReadonlyMap<string, string>,
    private readonly processEnv: NodeJS.ProcessEnv = process.env,
    /** Where each name of `values` was written (`.env:2, PORT in [REDIS]`), for messages. */
    private readonly origins: ReadonlyMap<string, string> = new Map(),
  ) {}

  get(name: string): string | boolean | undefined;
  get<T>(name: string, fallback: T): string | boolean | T;
  get<T>(name: string, fallback?: T): string | boolean | T | undefined {
    const key = envName(name);
    const raw = this.values.get(key);
    if (raw !== undefined) return CONVERTED.get(raw) ?? raw;
    // `Env::getEnv` converts only these two: `PHP_REDIS_AUTH=on` is the password "on".
    const variable = this.processEnv[`PHP_${key}`];
    if (variable === undefined) return fallback;
    return variable === 'true' ? true : variable === 'false' ? false : variable;
  }

  /** Where `get(name)` reads its value, as the user wrote it: a file's line, or a variable. */
  origin(name: string): string {
    const key = envName(name);
    if (this.values.has(key)) return this.origins.get(key) ?? key;
    if (this.processEnv[`PHP_${key}`] !== undefined) return `the environment variable PHP_${key}`;
    return 'the default';
  }
}

function envName(name: string): string {
  return upperCased(name.replaceAll('.', '_'));
}

/**
 * PHP's `strtoupper` and `array_change_key_case`: ASCII letters only (locale-independent since
 * PHP 8.2, the C locale's before), where `toUpperCase` would make `HOST` of `hoſt`.
 */
function upperCased(name: string): string {
  return name.replace(/[a-z]+/g, (letters) => letters.toUpperCase());
}

/**
 * What PHP's INI scanner strips around names and values: spaces and tabs, not the other blanks
 * `trim()` strips (a no-break space pasted from a web page, U+3000, a vertical tab), which PHP
 * keeps as part of a name or value.
 */
function withoutBlanks(text: string): string {
  return text.replace(/^[ \t]+|[ \t]+$/g, '');
}

function withoutLeadingBlanks(text: string): string {
  return text.replace(/^[ \t]+/, '');
}

/**
 * What PHP's INI scanner cannot read in a name (zend_ini_scanner.l, LABEL_CHAR), but for the
 * `[` of an array setting (`HOST[] = a`), which is kept as part of the name.
 */
const NOT_IN_NAME = /[!"$&()^{|}~]/;
/** In a name without a value, `[` too: PHP reads it as the start of an array setting's `= value`. */
const NOT_IN_BARE_NAME = /[!"$&()[^{|}~]/;
/**
 * Names PHP's scanner reads as constants: one fails the whole file, but where the line starts
 * with spaces alone before it (` none = 1` is a setting named `none`).
 */
const CONSTANT_NAME = /^(?:true|false|null|yes|no|on|off|none)$/i;

/** One setting of the file: its raw value and where it was written, for messages. */
interface Setting {
  readonly value: string;
  readonly origin: string;
}

/**
 * Parses a ThinkPHP `.env` as `parse_ini_file($file, true, INI_SCANNER_RAW)` does (INI with
 * sections; values are strings; `;` starts a comment, and a line holding only a name sets nothing;
 * see `rawValue` for quotes), then keeps what ThinkPHP 6's `Env::set` keeps of it: names
 * upper-cased, a section's settings as `SECTION_NAME`.
 */
export function parseThinkEnv(text: string, path = '.env', processEnv?: NodeJS.ProcessEnv): ThinkEnv {
  // What parse_ini_file answers: top-level names and sections by their names as written; a
  // section named again starts over, in the place of the first.
  const parsed = new Map<string, Setting | Map<string, Setting>>();
  let section: Map<string, Setting> | undefined;
  let sectionName = '';
  // A lone CR ends a line too, as PHP's scanner reads it. A byte order mark is dropped at the
  // start of the file only: anywhere else PHP keeps it in the name it precedes.
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  lines.forEach((rawLine, index) => {
    const refused = (problem?: string) => new ThinkEnvError(path, index + 1, rawLine, problem);
    // PHP's scanner reads spaces before a bracket as the start of an array setting's name:
    // ` [REDIS]` without `= value` after it fails the whole file. A tab is a blank to it.
    if (/^ +\[/.test(rawLine))
      throw refused('a section header indented with spaces, which PHP does not read as one');
    let line = withoutBlanks(rawLine);
    let afterSection = false;
    // PHP reads what follows the bracket on a section line as a line of its own: a comment
    // (`[REDIS] ; main`), another section, even a setting. The name is kept as written, blanks
    // inside the brackets included, and may be empty: `[]` makes `_NAME` settings.
    while (line.startsWith('[')) {
      const close = line.indexOf(']');
      if (close < 0) throw refused('PHP rejects the whole file at a section with no closing "]"');
      sectionName = line.slice(1, close);
      section = new Map();
      parsed.set(sectionName, section);
      line = withoutLeadingBlanks(line.slice(close + 1));
      afterSection = true;
    }
    if (line === '' || line.startsWith(';')) return;
    const end = line.search(/[=;]/);
    const isSetting = line[end] === '=';
    const name = withoutBlanks(end < 0 ? line : line.slice(0, end));
    // PHP fails the whole file at these refusals, and ThinkPHP then loads none of it: read as
    // given, Node would lock with settings the PHP side never sees.
    const unreadable = (isSetting ? NOT_IN_NAME : NOT_IN_BARE_NAME).exec(name);
    if (unreadable) throw refused(`PHP rejects the whole file at ${JSON.stringify(unreadable[0])} in a name`);
    if (CONSTANT_NAME.test(name) && (afterSection || !/^ +[^ \t]/.test(rawLine)))
      throw refused(
        `PHP rejects the whole file at the name ${JSON.stringify(name)}, which it reads as a constant`,
      );
    // A name without a value (a forgotten `=`, a `#` comment, which PHP 7 dropped): PHP sets
    // nothing for it.
    if (!isSetting) return;
    if (name === '') throw refused();
    const value = line.slice(end + 1);
    // PHP: "unexpected end of file".
    if (index === lines.length - 1 && withoutLeadingBlanks(value).startsWith(';'))
      throw refused(
        'PHP rejects the whole file when its last line holds a value that is only a comment, with no line break after it',
      );
    const origin = `${path}:${index + 1}, ${section ? `${name} in [${sectionName}]` : name}`;
    (section ?? parsed).set(name, { value: rawValue(value), origin });
  });
  // `Env::set`: array_change_key_case(CASE_UPPER), where the later of two names that differ in
  // case only wins in the place of the first; then each section flattened, in that order.
  const upper = new Map<string, Setting | Map<string, Setting>>();
  for (const [name, entry] of parsed) upper.set(upperCased(name), entry);
  const values = new Map<string, string>();
  const origins = new Map<string, string>();
  const keep = (name: string, { value, origin }: Setting) => {
    values.set(name, value);
    origins.set(name, origin);
  };
  for (const [name, entry] of upper) {
    if (entry instanceof Map)
      for (const [inner, setting] of entry) keep(`${name}_${upperCased(inner)}`, setting);
    else keep(name, entry);
  }
  return new ThinkEnv(values, processEnv, origins);
}

/** Reads a ThinkPHP `.env` file, e.g. `loadThinkEnv('.env').get('redis.host')`. */
export function loadThinkEnv(path: string, processEnv?: NodeJS.ProcessEnv): ThinkEnv {
  // readFileSync takes a number for an open file descriptor: it would read whatever that is.
  if (typeof path !== 'string' || path === '')
    throw new InvalidOptionError('path', path, 'the path of a .env file');
  return parseThinkEnv(readFileSync(path, 'utf8'), path, processEnv);
}

/**
 * A value as PHP's raw INI scanner reads it (zend_ini_scanner.l, state ST_RAW): the first `;`
 * starts a comment, except that in a value opening with `"` a later `"` takes it back (so
 * `"p;ss" ; note` is `p;ss`); then trailing blanks go, and one pair of enclosing double quotes.
 * Single quotes are kept: `'p;ss'` is `'p`, as ThinkPHP sees it.
 */
function rawValue(text: string): string {
  const value = withoutLeadingBlanks(text);
  let comment = -1;
  for (let i = 0; i < value.length; i++) {
    if (value[i] === ';' && comment < 0) comment = i;
    else if (value[i] === '"' && value[0] === '"') comment = -1;
  }
  const kept = (comment < 0 ? value : value.slice(0, comment)).replace(/[ \t]+$/, '');
  return kept.length > 1 && kept.startsWith('"') && kept.endsWith('"') ? kept.slice(1, -1) : kept;
}
