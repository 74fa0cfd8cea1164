/** The `p`-th percentile (0–100) of `values` by nearest rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

export function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Monotonic ms shared by every process on this host (CLOCK_MONOTONIC), so workers' events line up. */
export function hostNow(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** CPU time (user + system) this process spent since `start` (a `process.cpuUsage()`), in ms. */
export function cpuMsSince(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}
