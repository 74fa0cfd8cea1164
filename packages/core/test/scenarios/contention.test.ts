import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertHistory, checkHistory, readHistory, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startScript } from '../support/script-process.js';
import { reportFigures } from './support/figures.js';
import { longTier, timeLimit } from './support/tier.js';

const WORKERS = longTier ? 16 : 8;
const ITERATIONS = longTier ? 500 : 50;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** N processes × M holds of one key, each doing an unguarded witness read-modify-write inside. */
async function contend(workers: number, iterations: number, locked: boolean, lockerId?: string) {
  await using server = await startRedis();
  await using witnessServer = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), 's1-'));
  const key = 's1:counter';
  const processes = Array.from({ length: workers }, (_, id) =>
    startScript(new URL('./support/contender.ts', import.meta.url), {
      url: server.url,
      witnessUrl: witnessServer.url,
      key,
      iterations,
      id: `w${id}`,
      history: join(dir, `w${id}.jsonl`),
      locked,
      workers,
      lockerId,
    }),
  );
  await Promise.all(processes.map((child) => child.line((line) => line === 'ready')));
  const started = performance.now();
  for (const child of processes) child.send('go');
  const latencies = await Promise.all(processes.map((child) => child.line((line) => line.startsWith('{'))));
  const elapsed = performance.now() - started;
  await Promise.all(processes.map((child) => child.stop()));
  const witness = Number(await witnessServer.client().get(`${key}:witness`));
  const events = readHistory(dir);
  rmSync(dir, { recursive: true, force: true });
  const parsed = latencies.map((line) => JSON.parse(line) as { acquireMs: number[]; releaseMs: number[] });
  const keysWithoutTtl = await ttlLess(server.client());
  return { events, witness, elapsed, parsed, keysWithoutTtl };
}

/** Keys left without a TTL, apart from fence counters and their epoch stamps (which never expire, by design). */
async function ttlLess(redis: Redis): Promise<string[]> {
  const keys = await redis.keys('*');
  const pttls = await Promise.all(keys.map((key) => redis.pttl(key)));
  return keys.filter((key, i) => !/:fences?(:epoch)?$/.test(key) && pttls[i] === -1);
}

describe(`S1: ${WORKERS} processes × ${ITERATIONS} holds of one key, witness read-modify-write inside`, () => {
  it(
    '0 overlaps, exact witness, strictly increasing fences, no lock key without a TTL',
    async () => {
      const { events, witness, elapsed, parsed, keysWithoutTtl } = await contend(WORKERS, ITERATIONS, true);
      const total = WORKERS * ITERATIONS;
      const verdict = assertHistory(events, { name: 'S1', witness: { expected: total, actual: witness } });
      expect(verdict.intervals).toBe(total);
      expect(keysWithoutTtl).toEqual([]);
      const acquire = parsed.flatMap((one) => one.acquireMs);
      const release = parsed.flatMap((one) => one.releaseMs);
      reportFigures('S1', {
        holds: `${WORKERS}×${ITERATIONS}`,
        overlaps: verdict.overlaps.length,
        'lost updates': verdict.lostUpdates,
        'ops/s': total / (elapsed / 1000),
        'acquire p50 ms': percentile(acquire, 50),
        'acquire p99 ms': percentile(acquire, 99),
        'release p50 ms': percentile(release, 50),
        'release p99 ms': percentile(release, 99),
      });
    },
    timeLimit(60_000, 900_000),
  );

  it('replicas configured with one locker id (a service name): 0 overlaps, exact witness', async () => {
    const { events, witness } = await contend(4, 30, true, 'billing');
    const verdict = assertHistory(events, {
      name: 'S1 shared id',
      witness: { expected: 120, actual: witness },
    });
    expect(verdict.intervals).toBe(120);
  });

  it('without the lock (✗-expected): the checker reports overlaps and the witness lost updates', async () => {
    const { events, witness } = await contend(4, 20, false);
    const verdict = checkHistory(events, { witness: { expected: 80, actual: witness } });
    // At least those of the first sections, which all wait for each other between read and write.
    expect(verdict.overlaps.length).toBeGreaterThanOrEqual(3);
    expect(verdict.lostUpdates).toBeGreaterThanOrEqual(3);
  });
});
