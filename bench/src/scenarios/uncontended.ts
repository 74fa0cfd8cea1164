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

/** One client, sequential: acquire then release one key `iterations` times (after a short warm-up); the pair times in ms. */
export async function uncontendedSlice(
  subject: Subject,
  servers: readonly Redis[],
  iterations: number,
): Promise<Counted<number[]>> {
  const key = `bench:uncontended:${subject.name}`;
  for (let i = 0; i < 50; i++) await (await subject.acquire(key, 10_000))();
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
