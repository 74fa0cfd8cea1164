/** What `promise` rejected with, or `undefined` once it fulfilled: a test asserts on the error itself. */
export function thrown(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** Runs `call`: what it threw (`undefined` if it succeeded) and after how many ms it settled. */
export async function timed(call: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await thrown(call());
  return { error, ms: performance.now() - started };
}

/** Rejects when `promise` has not settled within `ms`, naming what never happened. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A timer of `ms` armed now that only records it fired. Timers fire in due order however late
 * the event loop runs, so a call found settled while `fired()` is still false settled before any
 * timer armed after this one for as long (a command timeout of the code under test): an
 * ordering a CPU stall cannot upset, where an elapsed-time bound can.
 */
export function mark(ms: number): { fired(): boolean; [Symbol.dispose](): void } {
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
  }, ms);
  return { fired: () => fired, [Symbol.dispose]: () => clearTimeout(timer) };
}
