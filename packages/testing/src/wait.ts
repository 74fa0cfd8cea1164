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
 * The deadline holds even while a check is still pending (a paused server, a client without a
 * command timeout): that check is abandoned, not awaited.
 */
export async function waitFor(
  what: string,
  condition: () => Promise<boolean>,
  { timeout = 30_000, interval = 50 }: WaitOptions = {},
): Promise<void> {
  const deadline = performance.now() + timeout;
  let lastError: unknown;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), Math.max(0, deadline - performance.now()));
    });
    let outcome: boolean | 'expired';
    try {
      // Promise.race keeps a handler on the check, so one abandoned here cannot reject unhandled.
      outcome = await Promise.race([Promise.resolve().then(condition), expired]);
    } catch (error) {
      lastError = error;
      outcome = false;
    } finally {
      clearTimeout(timer);
    }
    if (outcome === true) return;
    if (outcome === 'expired' || performance.now() >= deadline) {
      const notes = [
        ...(outcome === 'expired' ? ['the last check had not answered'] : []),
        ...(lastError instanceof Error ? [`last error: ${lastError.message}`] : []),
      ];
      const cause = notes.length > 0 ? ` (${notes.join('; ')})` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(interval, deadline - performance.now())));
  }
}
