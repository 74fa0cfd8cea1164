import type { Redis } from 'ioredis';
import { type Counted, counted, totals } from '../measure/counted.js';
import { sum } from '../measure/stats.js';
import type { Subject } from '../subjects.js';

export interface ThroughputResult {
  /** Completed acquire + release pairs per second. */
  readonly opsPerSec: number;
  /** Commands the server ran per pair, including those inside scripts. */
  readonly commandsPerOp: number;
  /** Commands the clients sent per pair. */
  readonly roundTripsPerOp: number;
  readonly ops: number;
}

/** What one slice completed, and in how many ms. */
export interface ThroughputSlice {
  readonly ops: number;
  readonly elapsed: number;
}

/** `loops` concurrent loops over `keys` keys (loop i uses key i mod keys), acquire then release, for `durationMs`. */
export function throughputSlice(
  subject: Subject,
  servers: readonly Redis[],
  { loops, keys, durationMs }: { loops: number; keys: number; durationMs: number },
): Promise<Counted<ThroughputSlice>> {
  return counted(servers, async () => {
    const start = performance.now();
    const deadline = start + durationMs;
    let ops = 0;
    await Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        const key = `bench:throughput:${subject.name}:${loop % keys}`;
        while (performance.now() < deadline) {
          const release = await subject.acquire(key, 10_000);
          await release();
          ops++;
        }
      }),
    );
    return { ops, elapsed: performance.now() - start };
  });
}

export function throughputOf(slices: readonly Counted<ThroughputSlice>[]): ThroughputResult {
  const ops = sum(slices.map((slice) => slice.result.ops));
  const elapsed = sum(slices.map((slice) => slice.result.elapsed));
  const { commands, roundTrips } = totals(slices);
  return {
    opsPerSec: (ops / elapsed) * 1000,
    commandsPerOp: commands / ops,
    roundTripsPerOp: roundTrips / ops,
    ops,
  };
}
