/**
 * A signal that aborts when either `a` or `b` does, unlinked by `dispose()`. Unlike
 * `AbortSignal.any`, nothing of it stays reachable from a long-lived signal once disposed
 * (on Node 20 a long-lived input keeps every composite made from it).
 */
export function linkSignals(a: AbortSignal, b: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const fromA = () => controller.abort(a.reason);
  const fromB = () => controller.abort(b.reason);
  const dispose = () => {
    a.removeEventListener('abort', fromA);
    b.removeEventListener('abort', fromB);
  };
  if (a.aborted) fromA();
  else if (b.aborted) fromB();
  else {
    a.addEventListener('abort', fromA, { once: true });
    b.addEventListener('abort', fromB, { once: true });
  }
  return { signal: controller.signal, dispose };
}
