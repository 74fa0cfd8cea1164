import { type Counted, totals } from '../measure/counted.js';
import { percentile, sleep, sum } from '../measure/stats.js';
import type { Subject } from '../subjects.js';

/** One hold as its waiter lived it, in host-monotonic ms (comparable across processes). */
export interface Hold {
  readonly waiter: string;
  readonly acquired: number;
  readonly releasing: number;
}

export interface WaiterPlan {
  readonly key: string;
  /** Waiter ids; each runs one loop. */
  readonly waiters: readonly string[];
  readonly holdMs: number;
  readonly workMs: number;
  readonly durationMs: number;
}

export interface ContentionResult {
  readonly acquisitions: number;
  readonly acquisitionsPerSec: number;
  /** Time the lock was held / wall time. */
  readonly utilization: number;
  /** Commands the server ran per acquisition, including those inside scripts. */
  readonly commandsPerAcquisition: number;
  /** Commands the clients sent per acquisition. */
  readonly roundTripsPerAcquisition: number;
  /** CPU time (user + system) of the clients' processes per acquisition, in ms, summed over processes. */
  readonly clientCpuPerAcquisition: number;
  /** Fewest / most acquisitions of any waiter. */
  readonly fairness: number;
  /** From a holder deciding to release to the next holder having the lock, in ms. */
  readonly handoffP50: number;
  readonly handoffP99: number;
  /** Holds that began before the previous one ended: must be 0. */
  readonly overlaps: number;
}

/** Each waiter: acquire, hold `holdMs`, release, work `workMs`, again, until `durationMs` passed. */
export async function runWaiters(subject: Subject, plan: WaiterPlan, now: () => number): Promise<Hold[]> {
  const deadline = now() + plan.durationMs;
  const holds: Hold[] = [];
  await Promise.all(
    plan.waiters.map(async (waiter) => {
      while (now() < deadline) {
        const release = await subject.acquire(plan.key, 10_000);
        const acquired = now();
        await sleep(plan.holdMs);
        const releasing = now();
        await release();
        holds.push({ waiter, acquired, releasing });
        await sleep(plan.workMs);
      }
    }),
  );
  return holds;
}

/** The holds of one stretch of a run and its wall time; gaps are only measured inside one stretch. */
export interface ContentionSlice {
  readonly holds: readonly Hold[];
  readonly wallMs: number;
  /** CPU time (user + system) the clients' processes spent meanwhile, in ms. */
  readonly cpuMs: number;
}

/** The contention figures of a run made of one or more slices, given the waiters' ids. */
export function analyse(
  slices: readonly Counted<ContentionSlice>[],
  waiters: readonly string[],
): ContentionResult {
  const gaps: number[] = [];
  let overlaps = 0;
  for (const { result } of slices) {
    const ordered = [...result.holds].sort((a, b) => a.acquired - b.acquired);
    for (let i = 1; i < ordered.length; i++) {
      const previous = ordered[i - 1]!;
      const current = ordered[i]!;
      if (current.acquired < previous.releasing) overlaps++;
      else gaps.push(current.acquired - previous.releasing);
    }
  }
  const holds = slices.flatMap((slice) => slice.result.holds);
  const wallMs = sum(slices.map((slice) => slice.result.wallMs));
  const { commands, roundTrips } = totals(slices);
  const perWaiter = waiters.map((waiter) => holds.filter((hold) => hold.waiter === waiter).length);
  const most = Math.max(...perWaiter);
  return {
    acquisitions: holds.length,
    acquisitionsPerSec: (holds.length / wallMs) * 1000,
    utilization: sum(holds.map((hold) => hold.releasing - hold.acquired)) / wallMs,
    commandsPerAcquisition: commands / holds.length,
    roundTripsPerAcquisition: roundTrips / holds.length,
    clientCpuPerAcquisition: sum(slices.map((slice) => slice.result.cpuMs)) / holds.length,
    fairness: most === 0 ? 0 : Math.min(...perWaiter) / most,
    handoffP50: percentile(gaps, 50),
    handoffP99: percentile(gaps, 99),
    overlaps,
  };
}
