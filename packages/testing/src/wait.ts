/** Options of `waitFor`. */
export interface WaitOptions {
  /** Milliseconds before giving up. Default: `30_000`. */
  timeout?: number;
  /** Milliseconds between checks. Default: `50`. */
  interval?: number;
}

/**
 * Re-checks `condition` until it returns true, or throws naming `what` and the last error the
 * check threw. A check that throws counts as "not yet": servers refuse commands while they start.
 */
export async function waitFor(
  what: string,
  condition: () => Promise<boolean>,
  { timeout = 30_000, interval = 50 }: WaitOptions = {},
): Promise<void> {
  const deadline = Date.now() + timeout;
  let lastError: unknown;
  for (;;) {
    try {
      if (await condition()) return;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
