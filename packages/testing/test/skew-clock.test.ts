import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import {
  buildSkewClock,
  createSkewClock,
  SkewClockUnavailableError,
  serverClockOffset,
  skewClockUnavailable,
  startRedis,
  waitFor,
} from '../src/index.js';
import { skewClockSource } from '../src/skew-clock-source.js';
import { useRedis } from '../src/vitest/index.js';

// Without a C compiler these tests cannot run: they are skipped with the reason printed, except
// in CI, where the project's rule is that no test is skipped: there they run and fail on the
// missing compiler (SkewClockUnavailableError), so scripts/setup must install one.
const missing = skewClockUnavailable();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`skipping the clock-skew shim tests: ${missing}`);

const register = fileURLToPath(new URL('../../../tooling/register.mjs', import.meta.url));
const builder = fileURLToPath(new URL('./fixtures/build-skew-clock.ts', import.meta.url));
const uid = process.getuid!();
const version = createHash('sha256').update(skewClockSource).digest('hex').slice(0, 12);
const isElf = (file: string) => readFileSync(file).subarray(0, 4).toString('latin1') === '\x7fELF';

/** A temporary directory of this test's own as `TMPDIR`, removed (and `TMPDIR` restored) after it. */
function ownTmpdir(onTestFinished: (fn: () => void) => void): string {
  const temp = realpathSync(mkdtempSync(join(tmpdir(), 'skew-clock-test-')));
  vi.stubEnv('TMPDIR', temp);
  onTestFinished(() => {
    vi.unstubAllEnvs();
    rmSync(temp, { recursive: true, force: true });
  });
  return temp;
}

/** `buildSkewClock()` in another process with `TMPDIR` set to `dir`: its path, or its error. */
async function buildElsewhere(dir: string): Promise<string> {
  const child = spawn(process.execPath, ['--import', register, builder], {
    env: { ...process.env, TMPDIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`build-skew-clock fixture exited with ${code}: ${errors}`);
  return output;
}

describe.skipIf(skip)('the clock-skew shim', () => {
  it("builds once into a shared library, in this user's private directory", () => {
    const library = buildSkewClock();
    expect(library).toBe(join(tmpdir(), `lock-testing-${uid}`, `skewclock-${version}.so`));
    expect(existsSync(library)).toBe(true);
    expect(buildSkewClock()).toBe(library);
  });

  it('never loads a file planted at a shared name: the skew is applied', async ({ onTestFinished }) => {
    const temp = ownTmpdir(onTestFinished);
    // Where earlier versions looked for the library, and took anything found.
    const shared = join(temp, `lock-testing-skewclock-${version}.so`);
    writeFileSync(shared, 'not a shared library');
    const library = buildSkewClock();
    expect(library).toBe(join(temp, `lock-testing-${uid}`, `skewclock-${version}.so`));
    expect(isElf(library)).toBe(true);
    const dir = lstatSync(join(temp, `lock-testing-${uid}`));
    expect({ uid: dir.uid, mode: dir.mode & 0o777 }).toEqual({ uid, mode: 0o700 });
    const clock = createSkewClock(60_000);
    onTestFinished(() => clock.remove());
    expect(clock.env.LD_PRELOAD).toBe(library);
    const server = await startRedis({ env: clock.env });
    onTestFinished(() => server.stop());
    expect(Math.abs((await serverClockOffset(server.client())) - 60_000)).toBeLessThan(1_000);
  });

  it('builds again over a file in its place that is not a library of this user writable by it alone', ({
    onTestFinished,
  }) => {
    const temp = ownTmpdir(onTestFinished);
    const library = buildSkewClock();
    // Before writing over it: nowhere but in this test's own directory.
    expect(library).toBe(join(temp, `lock-testing-${uid}`, `skewclock-${version}.so`));
    const good = join(temp, 'good.so');
    copyFileSync(library, good);
    const plant: Record<string, () => void> = {
      'not a shared library': () => writeFileSync(library, 'garbage'),
      'writable by others': () => {
        copyFileSync(good, library);
        chmodSync(library, 0o666);
      },
      'a symbolic link': () => symlinkSync(good, library),
    };
    // Only root can give a file away; as root, a library of another user is refused too.
    if (uid === 0) {
      plant['owned by another user'] = () => {
        copyFileSync(good, library);
        chownSync(library, 65_534, 65_534);
      };
    }
    for (const [what, planted] of Object.entries(plant)) {
      rmSync(library, { force: true });
      planted();
      expect(buildSkewClock(), what).toBe(library);
      const found = lstatSync(library);
      expect({
        what,
        file: found.isFile(),
        uid: found.uid,
        mode: found.mode & 0o777,
        elf: isElf(library),
      }).toEqual({ what, file: true, uid, mode: 0o700, elf: true });
    }
  });

  it("takes group and other access away from its directory, and refuses one that is not this user's", ({
    onTestFinished,
  }) => {
    const temp = ownTmpdir(onTestFinished);
    const mine = join(temp, `lock-testing-${uid}`);
    mkdirSync(mine);
    chmodSync(mine, 0o777);
    buildSkewClock();
    expect(lstatSync(mine).mode & 0o777).toBe(0o700);
    rmSync(mine, { recursive: true });
    writeFileSync(mine, '');
    expect(() => buildSkewClock()).toThrow(
      `the clock-skew shim needs a directory owned by this user at ${mine}, but it is not a directory: remove it`,
    );
    // Another user's directory, as this process sees it when its uid is not the directory's.
    const other = join(temp, `lock-testing-${uid + 1}`);
    mkdirSync(other, { mode: 0o777 });
    const getuid = vi.spyOn(process, 'getuid').mockReturnValue(uid + 1);
    try {
      expect(() => buildSkewClock()).toThrow(
        `the clock-skew shim needs a directory owned by this user at ${other}, but it belongs to uid ${uid}: remove it`,
      );
    } finally {
      getuid.mockRestore();
    }
    expect(readdirSync(other)).toEqual([]);
  });

  it('processes building it at the same time all get the whole library, and leave nothing else', async ({
    onTestFinished,
  }) => {
    const temp = ownTmpdir(onTestFinished);
    const paths = await Promise.all([buildElsewhere(temp), buildElsewhere(temp), buildElsewhere(temp)]);
    const library = join(temp, `lock-testing-${uid}`, `skewclock-${version}.so`);
    expect(paths).toEqual([library, library, library]);
    expect(isElf(library)).toBe(true);
    expect(readdirSync(join(temp, `lock-testing-${uid}`))).toEqual([`skewclock-${version}.so`]);
  });

  it("moves a redis-server's wall clock at run time, and with it key expiry", async () => {
    const clock = createSkewClock(10_000);
    try {
      const server = await useRedis({ env: clock.env });
      const redis = server.client();
      expect(Math.abs((await serverClockOffset(redis)) - 10_000)).toBeLessThan(1_000);
      await redis.set('lease', 'mine', 'PX', 60_000);
      clock.set(120_000);
      expect(clock.offset).toBe(120_000);
      await waitFor('the jump to reach the server', async () => (await serverClockOffset(redis)) > 100_000, {
        timeout: 2_000,
      });
      // A 60 s lease gone at once: Redis expires keys by its wall clock.
      expect(await redis.exists('lease')).toBe(0);
      clock.set(-5_000);
      await waitFor('the jump back', async () => (await serverClockOffset(redis)) < 0, { timeout: 2_000 });
    } finally {
      clock.remove();
    }
  });

  it('refuses an offset that is not whole ms, at creation before making its directory', () => {
    const clock = createSkewClock();
    try {
      expect(() => clock.set(1.5)).toThrow('the clock offset must be an integer of ms, got 1.5');
    } finally {
      clock.remove();
    }
    // A temporary directory of its own, as other test processes make skew clocks meanwhile.
    const temp = mkdtempSync(join(tmpdir(), 'skew-clock-test-'));
    vi.stubEnv('TMPDIR', temp);
    try {
      expect(() => createSkewClock(1.5)).toThrow('the clock offset must be an integer of ms, got 1.5');
      expect(readdirSync(temp).filter((name) => name.startsWith('lock-testing-skew-'))).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
      rmSync(temp, { recursive: true, force: true });
    }
  });
});

describe('without a C compiler', () => {
  it('says so in one line naming the compiler and how to install one', () => {
    const saved = process.env.CC;
    process.env.CC = 'no-such-compiler-here';
    try {
      expect(skewClockUnavailable()).toMatch(
        /^no C compiler \(no-such-compiler-here\) on PATH .*apt-get install -y gcc/,
      );
      expect(new SkewClockUnavailableError('x').name).toBe('SkewClockUnavailableError');
    } finally {
      if (saved === undefined) delete process.env.CC;
      else process.env.CC = saved;
    }
  });
});
