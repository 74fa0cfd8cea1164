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
