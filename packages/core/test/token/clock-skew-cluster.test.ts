import { ClockSkewError, createLocker, keySlot } from '@lock/core';
import {
  createSkewClock,
  type RedisCluster,
  type SkewClock,
  serverClockOffset,
  skewClockUnavailable,
  startCluster,
} from '@lock/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { skewWarnings } from '../support/clock-skew.js';

const SKEW = 3_000;

/** The first name `lock-<n>` whose lock key (`{lock:<name>}`) lies in `start..end`. */
function keyIn(start: number, end: number): string {
  for (let n = 0; ; n++) {
    const slot = keySlot(`{lock:lock-${n}}`);
    if (slot >= start && slot <= end) return `lock-${n}`;
  }
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// Without a C compiler the shim cannot be built: skipped with the reason printed, except in CI
// (CI=true), where the test runs and fails on the missing compiler (no skipped tests in CI).
const missing = skewClockUnavailable();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`skipping the clockSkew tests on a cluster: ${missing}`);

describe.skipIf(skip)(`a cluster whose first master's clock runs ${SKEW / 1000} s ahead`, () => {
  let clock: SkewClock;
  let cluster: RedisCluster;
  let skewedKey: string;
  let soundKey: string;
  let skewedMaster: string;

  beforeAll(async () => {
    clock = createSkewClock(SKEW);
    // Only node 0, the first master, runs the shim: the other master is in step.
    cluster = await startCluster({
      masters: 2,
      replicasPerMaster: 0,
      node: (index) => (index === 0 ? { env: clock.env } : undefined),
    });
    const [skewed, sound] = cluster.slotRanges;
    skewedKey = keyIn(skewed!.start, skewed!.end);
    soundKey = keyIn(sound!.start, sound!.end);
    skewedMaster = `${skewed!.master.host}:${skewed!.master.port}`;
    expect(Math.abs((await serverClockOffset(skewed!.master.client())) - SKEW)).toBeLessThan(500);
    expect(Math.abs(await serverClockOffset(sound!.master.client()))).toBeLessThan(500);
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    clock?.remove();
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  // First: a server is warned about once per process, so the refusing test's warning would hide this one's.
  it("'warn' grants on both masters and warns once, naming the skewed master", async () => {
    const warnings = skewWarnings();
    const redis = cluster.client();
    const locker = createLocker({ redis, clockSkew: { margin: 1_000, action: 'warn' } });
    for (const key of [skewedKey, soundKey, skewedKey]) {
      const lock = await locker.acquire(key, { ttl: 5_000, wait: 0 });
      expect(await redis.exists(`{lock:${key}}`)).toBe(1);
      await lock.release();
    }
    await locker.close();
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(
      new RegExp(`^the clock of Redis master ${escaped(skewedMaster)} \\(run_id \\w{8}\\) is \\d+ ms off`),
    );
  });

  it("'refuse' refuses a key on the skewed master with ClockSkewError naming that master, writes nothing, and grants a key on the sound master", async () => {
    const redis = cluster.client();
    const locker = createLocker({ redis, clockSkew: { margin: 1_000, action: 'refuse' } });
    const refused = await locker.acquire(skewedKey, { ttl: 5_000, wait: 0 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ClockSkewError);
    const error = refused as ClockSkewError;
    expect(error.key).toBe(skewedKey);
    expect(error.server).toMatch(new RegExp(`^${escaped(skewedMaster)} \\(run_id \\w{8}\\)$`));
    expect(error.margin).toBe(1_000);
    expect(Math.abs(error.offset - SKEW)).toBeLessThan(500);
    expect(await redis.exists(`{lock:${skewedKey}}`)).toBe(0);
    // Still off: read again, refused again.
    await expect(locker.acquire(skewedKey, { ttl: 5_000, wait: 0 })).rejects.toBeInstanceOf(ClockSkewError);
    const lock = await locker.acquire(soundKey, { ttl: 5_000, wait: 0 });
    expect(await redis.exists(`{lock:${soundKey}}`)).toBe(1);
    await lock.release();
    await locker.close();
  });

  it("names the skewed master when the stamp is a fresh client's first command (no eviction check before it)", async () => {
    const redis = cluster.client();
    const locker = createLocker({
      redis,
      eviction: 'ignore',
      clockSkew: { margin: 1_000, action: 'refuse' },
    });
    const refused = await locker.acquire(skewedKey, { ttl: 5_000, wait: 0 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ClockSkewError);
    expect((refused as ClockSkewError).server).toMatch(
      new RegExp(`^${escaped(skewedMaster)} \\(run_id \\w{8}\\)$`),
    );
    await locker.close();
  });
});
