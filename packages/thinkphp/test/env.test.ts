import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidOptionError } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { Lock, loadThinkEnv, parseThinkEnv, ThinkEnvError, thinkRedisOptions } from '@lock/thinkphp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phpAvailable, phpThinkEnv } from './php.js';

const sample = `APP_DEBUG = true
; a comment
# another comment

[REDIS]
HOST = 127.0.0.1
port = 6390
Auth = "s3cret;pass"
DATABASE = "2"

[database]
type = mysql
`;

describe('loadThinkEnv', () => {
  it('reads INI sections as ThinkPHP Env::get does: dotted, case-insensitive names', () => {
    const env = parseThinkEnv(sample, '.env', {});
    expect(env.get('redis.host')).toBe('127.0.0.1');
    expect(env.get('REDIS.PORT')).toBe('6390');
    expect(env.get('Redis.Auth')).toBe('s3cret;pass');
    expect(env.get('redis_database')).toBe('2');
    expect(env.get('database.type')).toBe('mysql');
    expect(env.get('app_debug')).toBe(true);
    expect(env.get('redis.missing')).toBeUndefined();
    expect(env.get('redis.missing', 'fallback')).toBe('fallback');
  });

  it.each([[42], [''], [undefined]])(
    'refuses the path %j by name, never reading a file descriptor',
    (path) => {
      expect(() => loadThinkEnv(path as never)).toThrow(InvalidOptionError);
      expect(() => loadThinkEnv(path as never)).toThrow(
        `invalid option "path": ${path === '' ? '""' : path}`,
      );
    },
  );

  it('falls back to PHP_<NAME> process variables, as ThinkPHP does: only true and false become booleans there', () => {
    const env = parseThinkEnv('AUTH = on\n', '.env', {
      PHP_REDIS_HOST: '10.0.0.5',
      PHP_REDIS_AUTH: 'on',
      PHP_APP_DEBUG: 'true',
    });
    expect(env.get('redis.host')).toBe('10.0.0.5');
    expect(env.get('redis.auth')).toBe('on');
    expect(env.get('app.debug')).toBe(true);
    expect(env.get('auth')).toBe(true);
  });

  it('answers a value named like a member of Object.prototype as the string it is', () => {
    const env = parseThinkEnv(
      '[REDIS]\nAUTH = valueOf\nHOST = toString\n[APP]\nNAME = __proto__\n',
      '.env',
      {},
    );
    expect([env.get('redis.auth'), env.get('redis.host'), env.get('app.name')]).toEqual([
      'valueOf',
      'toString',
      '__proto__',
    ]);
    expect(thinkRedisOptions(env)).toMatchObject({ host: 'toString', password: 'valueOf' });
  });

  it('turns redis.* settings into ioredis options and refuses a bad port naming it', () => {
    expect(thinkRedisOptions(parseThinkEnv(sample, '.env', {}))).toEqual({
      host: '127.0.0.1',
      port: 6390,
      db: 2,
      password: 's3cret;pass',
    });
    const bad = parseThinkEnv('[REDIS]\nPORT = 70000\n', '.env', {});
    expect(() => thinkRedisOptions(bad)).toThrow(InvalidOptionError);
    expect(() => thinkRedisOptions(bad)).toThrow(/"redis\.port": "70000"/);
    // The message names what the user wrote, and where: the line, or the environment variable.
    expect(() => thinkRedisOptions(bad)).toThrow(/read from \.env:2, PORT in \[REDIS\]\)$/);
    const flat = parseThinkEnv('; app\nREDIS_DATABASE = two\n', 'app/.env', {});
    expect(() => thinkRedisOptions(flat)).toThrow(
      /"redis\.database": "two" .*read from app\/\.env:2, REDIS_DATABASE\)$/,
    );
    // PHP connects to a port written with a leading zero, but sends the database as written,
    // and Redis refuses `SELECT 01` (checked against a server below).
    expect(
      thinkRedisOptions(parseThinkEnv('[REDIS]\nPORT = 06390\nDATABASE = 0\n', '.env', {})),
    ).toMatchObject({
      port: 6390,
      db: 0,
    });
    const zeroed = parseThinkEnv('[REDIS]\nDATABASE = 01\n', '.env', {});
    expect(() => thinkRedisOptions(zeroed)).toThrow(
      /"redis\.database": "01" .*without leading zeros; read from \.env:2, DATABASE in \[REDIS\]\)$/,
    );
    const variable = parseThinkEnv('', '.env', { PHP_REDIS_PORT: 'x' });
    expect(() => thinkRedisOptions(variable)).toThrow(
      /"redis\.port": "x" .*read from the environment variable PHP_REDIS_PORT\)$/,
    );
  });
});

/** Values after `AUTH =` whose comments and quotes PHP's raw INI scanner reads its own way. */
const rawValues = [
  's3cret',
  '127.0.0.1 ; main redis',
  '127.0.0.1;x',
  'a b  c \t',
  'a #b',
  'a=b',
  "'p;ss'",
  "'pass' ; comment",
  "'2'",
  '"p;ss"',
  '"p;ss" ; comment',
  '\t"tab"\t; comment',
  '"pass";x',
  '"a;c" x',
  '"a;c',
  '"a"b;c"',
  '"a" ;"b',
  '" ; "',
  '"" ; comment',
  '"',
  '; only a comment',
];

describe.runIf(phpAvailable)('parseThinkEnv against php-cli parse_ini_file(INI_SCANNER_RAW)', () => {
  it('reads every value as ThinkPHP does, inline comments and quotes included', async () => {
    const texts = rawValues.map((value) => `[REDIS]\nAUTH = ${value}\n`);
    const inPhp = (await phpThinkEnv(texts)).map((env) => env.REDIS_AUTH);
    expect(inPhp).not.toContain(undefined);
    // Paired with the input, so that a mismatch shows which line it was.
    const inNode = texts.map((text) => parseThinkEnv(text, '.env', {}).get('redis.auth'));
    expect(rawValues.map((value, i) => [value, inNode[i]])).toEqual(
      rawValues.map((value, i) => [value, inPhp[i]]),
    );
  });

  it('reads a whole file as ThinkPHP does', async () => {
    const file = `${sample}[REDIS2]\nHOST = 10.0.0.2 ; replica\nPORT = "6391" ; quoted\n`;
    const [inPhp] = await phpThinkEnv([file]);
    const env = parseThinkEnv(file, '.env', {});
    expect(Object.keys(inPhp!)).toHaveLength(8);
    // Only the raw "true" differs: get() turns it into a boolean, as ThinkPHP's Env::get does.
    expect(Object.fromEntries(Object.keys(inPhp!).map((name) => [name, env.get(name)]))).toEqual({
      ...inPhp,
      APP_DEBUG: true,
    });
  });
});

describe.runIf(phpAvailable)('.env files PHP reads its own way, checked against php-cli', () => {
  it('reads a comment after a section header, as PHP does', async () => {
    const files = [
      '[REDIS];main\nHOST = 10.0.0.9\n',
      '[REDIS] ; main\nHOST = 10.0.0.9\n',
      '[REDIS] # main\nHOST = 10.0.0.9\n',
    ];
    expect(await phpThinkEnv(files)).toEqual(files.map(() => ({ REDIS_HOST: '10.0.0.9' })));
    for (const file of files) expect(parseThinkEnv(file, '.env', {}).get('redis.host')).toBe('10.0.0.9');
  });

  it('keeps only the last of a repeated section (names compared case-insensitively) and a section name as written, spaces and all, as PHP does', async () => {
    const files = [
      '[REDIS]\nHOST = 10.0.0.5\nAUTH = secret\n[DB]\nHOST = db\n[REDIS]\nDATABASE = 2\n',
      '[redis]\nHOST = 10.0.0.5\n[REDIS]\nPORT = 6391\n',
      'REDIS_HOST = 10.0.0.1\n[REDIS]\nHOST = 10.0.0.5\n[REDIS]\nPORT = 6391\n',
      '[ REDIS ]\nHOST = 10.0.0.5\nPORT = 6380\n',
    ];
    const names = [
      'REDIS_HOST',
      'REDIS_AUTH',
      'REDIS_DATABASE',
      'REDIS_PORT',
      'DB_HOST',
      ' REDIS _HOST',
      ' REDIS _PORT',
    ];
    await expectReadAsPhp(files, names, [
      { DB_HOST: 'db', REDIS_DATABASE: '2' },
      { REDIS_PORT: '6391' },
      { REDIS_HOST: '10.0.0.1', REDIS_PORT: '6391' },
      { ' REDIS _HOST': '10.0.0.5', ' REDIS _PORT': '6380' },
    ]);
  });

  it('skips a name without a value and reads an empty section, and what follows a section header on its line, as PHP does', async () => {
    const files = [
      '[REDIS]\nfoo\nHOST = 10.0.0.9\n',
      // A forgotten `=`: PHP sets nothing for the line, and ThinkPHP falls back to the default.
      '[REDIS]\nHOST 10.0.0.1\nPORT = 6391\n',
      // No line continuation: the next line is a name of its own.
      '[REDIS]\nAUTH = a\\\nb\nPORT = 6391\n',
      '[REDIS]\nHOST = 10.0.0.9\n[]\nPORT = 6391\n',
      // PHP 7 dropped `#` comments: this is a name, or a setting named "# HOST".
      '# main redis\n[REDIS]\n# HOST = 10.0.0.2\nHOST = 10.0.0.9\n',
      '[REDIS]\nfoo ; PORT = 6380\nPORT = 6391\n',
      '[REDIS] HOST = 10.0.0.9\n[DB] [REDIS2]\nPORT = 6391\n',
      '\t[REDIS]\n  HOST = 10.0.0.9\n',
    ];
    const names = [
      'REDIS_HOST',
      'REDIS_PORT',
      'REDIS_AUTH',
      'REDIS_FOO',
      'REDIS_B',
      '_PORT',
      'REDIS_# HOST',
      'REDIS2_PORT',
    ];
    await expectReadAsPhp(files, names, [
      { REDIS_HOST: '10.0.0.9' },
      { REDIS_PORT: '6391' },
      { REDIS_AUTH: 'a\\', REDIS_PORT: '6391' },
      { REDIS_HOST: '10.0.0.9', _PORT: '6391' },
      { 'REDIS_# HOST': '10.0.0.2', REDIS_HOST: '10.0.0.9' },
      { REDIS_PORT: '6391' },
      { REDIS_HOST: '10.0.0.9', REDIS2_PORT: '6391' },
      { REDIS_HOST: '10.0.0.9' },
    ]);
  });

  it('strips only spaces and tabs around names and values, upper-cases ASCII letters only, and drops a byte order mark at the start alone, as PHP does', async () => {
    const files = [
      // A no-break space pasted from a web page: part of the name to PHP, which keeps database 1.
      '[REDIS]\nDATABASE = 1\n\u00a0DATABASE = 2\n',
      '[REDIS]\nHOST = 10.0.0.9\u00a0\nPORT = 6391\u3000\n',
      '[REDIS]\n\u3000HOST\t=\t \u3000\n\vPORT = 6391\nAUTH = a\f\n',
      '\uFEFF[REDIS]\nHOST = 10.0.0.9\n\uFEFFPORT = 6391\n',
      '[REDIS]\nhoſt = 10.0.0.9\nßPORT = 6391\n',
    ];
    // Among the names, those Node would make of them by trimming every blank and upper-casing every letter.
    const names = ['REDIS_HOST', 'REDIS_PORT', 'REDIS_SSPORT', 'REDIS_AUTH', 'REDIS_DATABASE'];
    await expectReadAsPhp(files, names, [
      { REDIS_DATABASE: '1', 'REDIS_\u00a0DATABASE': '2' },
      { REDIS_HOST: '10.0.0.9\u00a0', REDIS_PORT: '6391\u3000' },
      { 'REDIS_\u3000HOST': '\u3000', 'REDIS_\vPORT': '6391', REDIS_AUTH: 'a\f' },
      { REDIS_HOST: '10.0.0.9', 'REDIS_\uFEFFPORT': '6391' },
      { REDIS_HOſT: '10.0.0.9', REDIS_ßPORT: '6391' },
    ]);
  });

  it('refuses a file naming a setting as PHP names a constant, which PHP rejects whole, but where only spaces start the line', async () => {
    const rejected = [
      '[REDIS]\nHOST = 10.0.0.9\n[FEATURE]\nNONE = 1\n',
      '[REDIS]\nHOST = 10.0.0.9\nnull\n',
      '[REDIS]\nHOST = 10.0.0.9\n\tOff\t= 1\n',
      '[REDIS]\nHOST = 10.0.0.9\n \tyes = 1\n',
      '[REDIS]\nHOST = 10.0.0.9\n[FEATURE]  true = 1\n',
      '[REDIS]\r\nHOST = 10.0.0.9\r\nfalse;x\r\n',
    ];
    expect(await phpThinkEnv(rejected)).toEqual(rejected.map(() => ({})));
    for (const file of rejected) {
      expect(() => parseThinkEnv(file, 'app/.env', {})).toThrow(ThinkEnvError);
      expect(() => parseThinkEnv(file, 'app/.env', {})).toThrow(
        /^app\/\.env:[34]: PHP rejects the whole file at the name "\w+", which it reads as a constant/,
      );
    }
    const accepted = [
      '[REDIS]\nHOST = 10.0.0.9\n  none = 1\n',
      '[REDIS]\nHOST = 10.0.0.9\n On\n',
      '[REDIS]\nHOST = 10.0.0.9\nnone x = 1\ntrue_a = 2\nnonea = 3\n',
    ];
    await expectReadAsPhp(
      accepted,
      ['REDIS_ON'],
      [
        { REDIS_HOST: '10.0.0.9', REDIS_NONE: '1' },
        { REDIS_HOST: '10.0.0.9' },
        { REDIS_HOST: '10.0.0.9', 'REDIS_NONE X': '1', REDIS_TRUE_A: '2', REDIS_NONEA: '3' },
      ],
    );
  });

  it('ends a line at a lone CR, as PHP does', async () => {
    const file = '[REDIS]\rHOST = 10.0.0.9\rPORT = 6391\r';
    const [inPhp] = await phpThinkEnv([file]);
    expect(inPhp).toEqual({ REDIS_HOST: '10.0.0.9', REDIS_PORT: '6391' });
    const env = parseThinkEnv(file, '.env', {});
    expect([env.get('redis.host'), env.get('redis.port')]).toEqual(['10.0.0.9', '6391']);
  });

  it('refuses a file PHP rejects as a whole (ThinkPHP then loads none of it), naming the line', async () => {
    const rejected = ['[REDIS]\nHOST = 10.0.0.9\nAUTH = ; none', '[REDIS]\nHOST = 10.0.0.9\nAUTH=;'];
    expect(await phpThinkEnv(rejected)).toEqual([{}, {}]);
    for (const file of rejected) {
      expect(() => parseThinkEnv(file, 'app/.env', {})).toThrow(ThinkEnvError);
      expect(() => parseThinkEnv(file, 'app/.env', {})).toThrow(/app\/\.env:3: PHP rejects the whole file/);
    }
    // A character PHP's scanner cannot read in a name (in a `#` line of old, or the second line
    // of a value that does not span lines), a section left open or indented with spaces, a
    // setting without a name.
    const broken = [
      ['[REDIS]\nHOST = 10.0.0.9\n# main (6379)\n', 3, /PHP rejects the whole file at "\(" in a name/],
      ['[REDIS]\nAUTH = "multi\nline"\n', 3, /PHP rejects the whole file at "\\"" in a name/],
      ['[REDIS] # main!\nHOST = 10.0.0.9\n', 1, /PHP rejects the whole file at "!" in a name/],
      ['[REDIS]\nHOST = 10.0.0.9\nHOST[\n', 3, /PHP rejects the whole file at "\[" in a name/],
      ['[REDIS\nHOST = 10.0.0.9\n', 1, /PHP rejects the whole file at a section with no closing "\]"/],
      [
        '[DB]\n  [REDIS]\nHOST = 10.0.0.9\n',
        2,
        /a section header indented with spaces, which PHP does not read/,
      ],
      ['[REDIS]\nHOST = 10.0.0.9\n= 6391\n', 3, /expected "KEY = value" or "\[SECTION\]", got "= 6391"/],
    ] as const;
    expect(await phpThinkEnv(broken.map(([file]) => file))).toEqual(broken.map(() => ({})));
    for (const [file, line, problem] of broken) {
      expect(() => parseThinkEnv(file, 'app/.env', {})).toThrow(ThinkEnvError);
      expect(() => parseThinkEnv(file, 'app/.env', {})).toThrow(
        new RegExp(`^app/\\.env:${line}: ${problem.source}`),
      );
    }
    // With the line break PHP reads it, and so does Node.
    const accepted = `${rejected[0]}\n`;
    const [inPhp] = await phpThinkEnv([accepted]);
    expect(inPhp).toEqual({ REDIS_HOST: '10.0.0.9', REDIS_AUTH: '' });
    expect(parseThinkEnv(accepted, '.env', {}).get('redis.auth')).toBe('');
  });
});

describe('a Lock connected from a .env file', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await Lock.disconnect();
    await server.stop();
  });

  it('locks on the server and database the file names', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'thinkphp-env-'));
    try {
      const path = join(dir, '.env');
      writeFileSync(path, `[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\nAUTH =\nDATABASE = 3\n`);
      const env = loadThinkEnv(path, {});
      const lock = new Lock('lock_goods:300', { env });
      expect(await lock.lock()).toBe(true);
      const redis = server.client({ db: 3 });
      expect(await redis.get('lock_goods:300')).toMatch(/^\d{10}$/);
      await lock.unlock();
      expect(await redis.exists('lock_goods:300')).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a database the server does not have, naming redis.database, and writes nothing in db 0', async () => {
    const env = parseThinkEnv(
      `[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\nDATABASE = 99\n`,
      'app/.env',
      {},
    );
    const refused =
      /"redis\.database": "99" .*ERR DB index is out of range.*read from app\/\.env:4, DATABASE in \[REDIS\]\)$/;
    const calls: [string, () => Promise<unknown>][] = [
      ['lock()', () => new Lock('lock_baddb:1', { env }).lock()],
      // Once refused, the connection stays refused: a later call is told why too.
      ['a later lock()', () => new Lock('lock_baddb:1', { env }).lock()],
      ['strict lock()', () => new Lock('lock_baddb:1', { env, strict: true }).lock()],
      ['strict unlock()', () => new Lock('lock_baddb:1', { env, strict: true }).unlock()],
      ['Lock.wrap()', () => Lock.wrap('lock_baddb:1', () => 'ran', { env })],
    ];
    const outcomes = [];
    for (const [name, call] of calls) {
      outcomes.push([name, await call().then(String, (error: Error) => `${error.name}: ${error.message}`)]);
    }
    expect(outcomes).toEqual(
      calls.map(([name]) => [
        name,
        expect.stringMatching(new RegExp(`^InvalidOptionError: .*${refused.source}`)),
      ]),
    );
    await Lock.disconnect();
    // Nothing ran on the db ioredis stayed on after the refused SELECT.
    expect(await server.client().keys('*lock_baddb*')).toEqual([]);
  });

  it('refuses a database written with a leading zero, which the server refuses as Predis sends it, before connecting', async () => {
    await expect(server.client().call('SELECT', '01')).rejects.toThrow(/ERR value is not an integer/);
    const env = parseThinkEnv(
      `[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\nDATABASE = 01\n`,
      '.env',
      {},
    );
    expect(() => new Lock('lock_zero:1', { env })).toThrow(/"redis\.database": "01"/);
  });

  it('disconnect() called again while it runs resolves once the first call has released and closed', async () => {
    const env = parseThinkEnv(`[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\n`, '.env', {});
    const lock = new Lock('lock_goods:301', { env });
    expect(await lock.lock()).toBe(true);
    let firstDone = false;
    const first = Lock.disconnect().then(() => {
      firstDone = true;
    });
    await Lock.disconnect();
    expect(firstDone).toBe(true);
    await first;
    expect(await server.client().exists('lock_goods:301')).toBe(0);
  });

  it('a Lock made before disconnect() rejects with LockerClosedError in both modes; one made after connects anew', async () => {
    const env = parseThinkEnv(`[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\n`, '.env', {});
    const before = [new Lock('lock_closed:1', { env }), new Lock('lock_closed:2', { env, strict: true })];
    for (const lock of before) expect(await lock.lock()).toBe(true);
    await Lock.disconnect();
    const outcomes = [];
    for (const lock of before) {
      outcomes.push(await lock.lock().then(String, (error: Error) => error.name));
      outcomes.push(await lock.unlock().then(String, (error: Error) => error.name));
    }
    // disconnect() released the default-mode hold: its unlock() has nothing left to do. The
    // strict one it could not release (the PHP class keeps no hold): its unlock() must say so.
    expect(outcomes).toEqual(['LockerClosedError', 'undefined', 'LockerClosedError', 'LockerClosedError']);
    expect(await server.client().exists('lock_closed:1', 'lock_closed:2')).toBe(1);
    expect(await new Lock('lock_closed:3', { env }).lock()).toBe(true);
  });

  it('connects past inline comments, as ThinkPHP reads them', async () => {
    const env = parseThinkEnv(
      `[REDIS]\nHOST = 127.0.0.1 ; main redis\nPORT = ${server.port} ; test server\nAUTH = "" ; none\nDATABASE = 4 ; jobs\n`,
      '.env',
      {},
    );
    const lock = new Lock('lock_goods:300', { env });
    expect(await lock.lock()).toBe(true);
    expect(await server.client({ db: 4 }).get('lock_goods:300')).toMatch(/^\d{10}$/);
    await lock.unlock();
  });
});

/**
 * Checks that php-cli reads `files` (each the text of one `.env`) as `expected`, and Node the
 * same: every name PHP made, and none of `names` that PHP did not.
 */
async function expectReadAsPhp(
  files: readonly string[],
  names: readonly string[],
  expected: readonly Record<string, string>[],
): Promise<void> {
  const inPhp = await phpThinkEnv(files);
  expect(inPhp).toEqual(expected);
  const inNode = files.map((file, i) => namedSettings(file, [...names, ...Object.keys(inPhp[i]!)]));
  expect(inNode).toEqual(inPhp);
}

/** The settings of `names` that a .env file's text gives, as PHP's are read by the tests (absent ones left out). */
function namedSettings(file: string, names: readonly string[]): Record<string, unknown> {
  const env = parseThinkEnv(file, '.env', {});
  return Object.fromEntries(
    names.flatMap((name) => {
      const value = env.get(name);
      return value === undefined ? [] : [[name, value]];
    }),
  );
}
