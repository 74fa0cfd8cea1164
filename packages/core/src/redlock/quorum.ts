/** How many of `nodes` masters must agree: a strict majority, ⌊N/2⌋ + 1. */
export function quorumOf(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/**
 * Clock drift allowance for a lease: `⌊ttl × factor⌋ + 2` ms. The 2 ms cover Redis's 1 ms expiry
 * precision plus a floor for short leases (redlock-rb's formula).
 */
export function driftOf(ttl: number, factor: number): number {
  return Math.floor(ttl * factor) + 2;
}

/**
 * How long a lease of `ttl` ms is certainly held, in whole ms counted from the start of the
 * attempt that set it (the backend contract: the engine adds it to its own send time): the ttl
 * less the drift allowance. Every key of the attempt was set after that start, so it lives at
 * least this long on each node that set it. Rounded down so that rounding never adds time.
 */
export function validityOf(ttl: number, factor: number): number {
  return Math.floor(ttl - driftOf(ttl, factor));
}

/**
 * Whether a lease is still worth handing out `elapsed` ms after its attempt started: only
 * while ttl − elapsed − drift > 0, so no caller ever receives a lease that has already ended.
 */
export function stillValid(validity: number, elapsed: number): boolean {
  return elapsed < validity;
}

/**
 * The `rank`-th smallest of `values` (1-based), or null when there are fewer values. RedLock uses
 * it to estimate when a quorum of nodes will be free: the lock is free once `quorum` nodes are.
 */
export function nthSmallest(values: readonly number[], rank: number): number | null {
  if (rank < 1 || values.length < rank) return null;
  return [...values].sort((a, b) => a - b)[rank - 1] ?? null;
}

/** The `rank`-th largest of `values` (1-based), or null when there are fewer values. */
export function nthLargest(values: readonly number[], rank: number): number | null {
  if (rank < 1 || values.length < rank) return null;
  return [...values].sort((a, b) => b - a)[rank - 1] ?? null;
}
