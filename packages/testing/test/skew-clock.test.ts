import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  buildSkewClock,
  createSkewClock,
  SkewClockUnavailableError,
  serverClockOffset,
  skewClockUnavailable,
  waitFor,
} from '../src/index.js';
import { useRedis } from '../src/vitest/index.js';

// Without a C compiler these tests cannot run: they are skipped with the reason printed, except
// in CI, where the project's rule is that no test is skipped: there they run and fail on the
// missing compiler (SkewClockUnavailableError), so scripts/setup must install one.
const missing = skewClockUnavailable();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`skipping the clock-skew shim tests: ${missing}`);

describe.skipIf(skip)('the clock-skew shim', () => {
  it('builds once into a shared library', () => {
    const library = buildSkewClock();
    expect(existsSync(library)).toBe(true);
    expect(buildSkewClock()).toBe(library);
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
