import type { Redis } from 'ioredis';
import { type Counted, counted, totals } from '../measure/counted.js';
import { percentile, sum } from '../measure/stats.js';
import type { Subject } from '../subjects.js';

export interface LatencyResult {
  /** Acquire + release, in ms. */
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  /** Commands the server ran per acquire + release, including those inside scripts. */
  readonly commandsPerOp: number;
  /** Commands the client sent per acquire + release. */
  readonly roundTripsPerOp: number;
  readonly iterations: number;
}

/**
 * Un-timed pairs before a kind's first timed one: until this many are done or WARM_MS has passed.
 * The timed pairs (500 per slice) are too few for V8 to compile a path as long as a lock
 * library's: measured cold, in a process that had run 50 pairs, `@lock` came out at 1.4 to 1.7 ×
 * the floor against 1.2 × compiled (bench/RESULTS.md). A service that locks all day runs it
 * compiled; what a process pays for its first pairs is not what this scenario reports.
 */
const WARM_PAIRS = 3_000;
const WARM_MS = 1_500;
/** Kinds already warmed in this process: the RedLock scenario measures through this function again, with subjects of its own. */
const warmed = new Set<string>();

/** One client, sequential: acquire then release one key `iterations` times (after a warm-up); the pair times in ms. */
export async function uncontendedSlice(
  subject: Subject,
  servers: readonly Redis[],
  iterations: number,
): Promise<Counted<number[]>> {
  const key = `bench:uncontended:${subject.name}`;
  const warmPairs = warmed.has(subject.name) ? 50 : WARM_PAIRS;
  warmed.add(subject.name);
  const until = performance.now() + WARM_MS;
  for (let i = 0; i < warmPairs && (i < 50 || performance.now() < until); i++) {
    await (await subject.acquire(key, 10_000))();
  }
  return counted(servers, async () => {
    const samples: number[] = [];
    for (let i = 0; i < iterations; i++) {
      const start = performance.now();
      const release = await subject.acquire(key, 10_000);
      await release();
      samples.push(performance.now() - start);
    }
    return samples;
  });
}

export function latencyOf(slices: readonly Counted<number[]>[]): LatencyResult {
  const samples = slices.flatMap((slice) => slice.result);
  const { commands, roundTrips } = totals(slices);
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    mean: sum(samples) / samples.length,
    commandsPerOp: commands / samples.length,
    roundTripsPerOp: roundTrips / samples.length,
    iterations: samples.length,
  };
}
