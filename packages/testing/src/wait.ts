/** Options of `waitFor`. */
export interface WaitOptions {
  /** Milliseconds before giving up, a finite number >= 0. Default: `30_000`. */
  timeout?: number;
  /** Milliseconds between checks, a finite number >= 0. Default: `50`. */
  interval?: number;
}

/**
 * Re-checks `condition` until it returns true, or throws naming `what`, what the last check did
 * (answered false, threw, or had not answered) and the last error any check threw. A check
 * that throws counts as "not yet": servers refuse commands while they start. The deadline
 * holds even while a check is still pending (a paused server, a client without a command
 * timeout): that check is abandoned, not awaited.
 */
export async function waitFor(
  what: string,
  condition: () => Promise<boolean>,
  { timeout = 30_000, interval = 50 }: WaitOptions = {},
): Promise<void> {
  for (const [name, value] of [
    ['timeout', timeout],
    ['interval', interval],
  ] as const) {
    if (!(value >= 0 && Number.isFinite(value))) {
      throw new RangeError(`${name} must be a finite number >= 0, got ${value}`);
    }
  }
  const deadline = performance.now() + timeout;
  let lastError: { value: unknown } | undefined;
  // Whether the last check that answered threw: an error from long before a stream of plain
  // "not yet" answers would otherwise read as the current cause.
  let lastThrew = false;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), Math.max(0, deadline - performance.now()));
    });
    let outcome: boolean | 'expired';
    try {
      // Promise.race keeps a handler on the check, so one abandoned here cannot reject unhandled.
      outcome = await Promise.race([Promise.resolve().then(condition), expired]);
      if (outcome !== 'expired') lastThrew = false;
    } catch (error) {
      lastError = { value: error };
      lastThrew = true;
      outcome = false;
    } finally {
      clearTimeout(timer);
    }
    if (outcome === true) return;
    if (outcome === 'expired' || performance.now() >= deadline) {
      const notes = [
        ...(outcome === 'expired' ? ['the last check had not answered'] : []),
        ...(lastError === undefined
          ? []
          : lastThrew
            ? [`last error: ${describe(lastError.value)}`]
            : [`the last answer was false; an earlier check threw: ${describe(lastError.value)}`]),
      ];
      const cause = notes.length > 0 ? ` (${notes.join('; ')})` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(interval, deadline - performance.now())));
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
