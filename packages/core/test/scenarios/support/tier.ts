/**
 * Fault tiers. The default tier runs on every `vitest run` and in CI (`bash .ci/run`);
 * `FAULTS=long` adds the long tier (more rounds, slower faults), which is run by hand (see
 * docs/reliability.md, "How to run"). Selecting the long tier with `describe.runIf(longTier)` is
 * a tier choice, not a skip.
 */
export const longTier = process.env.FAULTS === 'long';

/** Rounds of a repeated fault: `fast` in the default tier, `long` under FAULTS=long. */
export function rounds(fast: number, long: number): number {
  return longTier ? long : fast;
}

/** A test's time limit in ms: `fast` in the default tier, `long` under FAULTS=long. */
export function timeLimit(fast: number, long: number): number {
  return longTier ? long : fast;
}
