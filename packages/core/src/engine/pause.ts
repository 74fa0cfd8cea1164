/**
 * Waits until `wake()` is called, `ms` pass, or `signal` aborts (then rejects with its
 * reason). Everything it registers is removed when it settles, so a long wait made of many
 * pauses holds no memory per pause.
 */
export function pause(
  ms: number,
  signal: AbortSignal | undefined,
  onWake: (wake: () => void) => () => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // An abort event already dispatched would never reach a listener added now.
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const done = () => {
      clearTimeout(timer);
      stopListening();
      signal?.removeEventListener('abort', aborted);
    };
    const woken = () => {
      done();
      resolve();
    };
    const aborted = () => {
      done();
      reject(signal?.reason);
    };
    const timer = setTimeout(woken, ms);
    const stopListening = onWake(woken);
    signal?.addEventListener('abort', aborted, { once: true });
  });
}
