/** What one node answered to a fanned-out call. */
export type NodeOutcome<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'timed-out' };

/**
 * Runs `call` on every node at once and waits for all of them, giving up on any node that has
 * not answered within `timeout` ms, so that a dead or frozen node costs at most the timeout
 * instead of blocking the attempt. A call that is given up on keeps running; its late result
 * or error is ignored.
 */
export function fanOut<N, T>(
  nodes: readonly N[],
  timeout: number,
  call: (node: N, index: number) => Promise<T>,
): Promise<NodeOutcome<T>[]> {
  return Promise.all(nodes.map((node, index) => withTimeout(() => call(node, index), timeout)));
}

function withTimeout<T>(call: () => Promise<T>, timeout: number): Promise<NodeOutcome<T>> {
  return new Promise((resolve) => {
    // Timers run before I/O in each turn of the event loop, so after a stall of our own process
    // the timer would fire while the node's answer already waits to be read: the verdict is
    // deferred to the check phase, after pending I/O has been read, so that only a node that
    // really has not answered counts as timed out.
    const timer = setTimeout(() => setImmediate(() => resolve({ kind: 'timed-out' })), timeout);
    let pending: Promise<T>;
    try {
      pending = call();
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve({ kind: 'ok', value });
      },
      (error: unknown) => {
        clearTimeout(timer);
        resolve({ kind: 'failed', error });
      },
    );
  });
}

/** How many nodes answered, failed and timed out. */
export function tally<T>(outcomes: readonly NodeOutcome<T>[]): {
  ok: number;
  failed: number;
  timedOut: number;
} {
  let ok = 0;
  let failed = 0;
  let timedOut = 0;
  for (const outcome of outcomes) {
    if (outcome.kind === 'ok') ok++;
    else if (outcome.kind === 'failed') failed++;
    else timedOut++;
  }
  return { ok, failed, timedOut };
}
