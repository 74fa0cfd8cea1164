/** One critical section as a worker lived it: monotonic times from `process.hrtime.bigint()` (shared by all processes of the host). */
export interface Interval {
  readonly worker: number;
  /** When the acquire call that got the hold was made (contention workers record it). */
  readonly requested?: bigint;
  readonly start: bigint;
  readonly end: bigint;
  readonly fence: number;
}

/** What the checker found in a history. */
export interface Verdict {
  readonly overlaps: number;
  readonly fenceRegressions: number;
  readonly intervals: number;
}

/**
 * Checks a lock history: believed-held intervals must not overlap, and fences must strictly
 * increase in the order the intervals started. All workers run on this host, so hrtime
 * (CLOCK_MONOTONIC) orders their events exactly.
 */
export function checkHistory(intervals: readonly Interval[]): Verdict {
  const ordered = [...intervals].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  let overlaps = 0;
  let fenceRegressions = 0;
  let latestEnd = -1n;
  for (let i = 0; i < ordered.length; i++) {
    const current = ordered[i]!;
    if (current.start <= latestEnd) overlaps += 1;
    if (current.end > latestEnd) latestEnd = current.end;
    const previous = ordered[i - 1];
    if (previous && current.fence <= previous.fence) fenceRegressions += 1;
  }
  return { overlaps, fenceRegressions, intervals: ordered.length };
}

export function parseIntervals(jsonl: string): Interval[] {
  return jsonl
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => {
      const raw = JSON.parse(line) as {
        worker: number;
        requested?: string;
        start: string;
        end: string;
        fence: number;
      };
      // Workers in other languages (the PHP fleet) do not record when they asked.
      return {
        worker: raw.worker,
        ...(raw.requested === undefined ? {} : { requested: BigInt(raw.requested) }),
        start: BigInt(raw.start),
        end: BigInt(raw.end),
        fence: raw.fence,
      };
    });
}
