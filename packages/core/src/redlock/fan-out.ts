/** What one node answered to a fanned-out call. */
export type NodeOutcome<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'failed'; readonly error: unknown }
  | { readonly kind: 'timed-out' };

const TIMED_OUT: NodeOutcome<never> = { kind: 'timed-out' };

/**
 * Runs `call` on every node at once and waits for all of them, giving up on any node that has
 * not answered within `timeout` ms, so that a dead or frozen node costs at most the timeout
 * instead of blocking the attempt. A call that is given up on keeps running; its late value is
 * passed to `late` (its error is ignored). `settled` tells a call that is still on its way
 * whether the fan-out is done with its node (it timed out), so that a step it has yet to send can
 * be left out. One timer serves the whole fan-out, whatever the number of nodes.
 */
export function fanOut<N, T>(
  nodes: readonly N[],
  timeout: number,
  call: (node: N, index: number, settled: () => boolean) => Promise<T>,
  late?: (index: number, value: T) => void,
): Promise<NodeOutcome<T>[]> {
  return new Promise((resolve) => {
    const outcomes: (NodeOutcome<T> | undefined)[] = new Array(nodes.length).fill(undefined);
    let pending = nodes.length;
    let timer: NodeJS.Timeout | undefined;
    const settle = (index: number, outcome: NodeOutcome<T>) => {
      if (outcomes[index] !== undefined) return;
      outcomes[index] = outcome;
      pending -= 1;
      if (pending > 0) return;
      clearTimeout(timer);
      resolve(outcomes as NodeOutcome<T>[]);
    };
    if (pending === 0) return resolve([]);
    nodes.forEach((node, index) => {
      let answer: Promise<T>;
      try {
        answer = call(node, index, () => outcomes[index] !== undefined);
      } catch (error) {
        answer = Promise.reject(error);
      }
      answer.then(
        (value) => {
          if (outcomes[index] === TIMED_OUT) late?.(index, value);
          else settle(index, { kind: 'ok', value });
        },
        (error: unknown) => settle(index, { kind: 'failed', error }),
      );
    });
    // Timers run before I/O in each turn of the event loop, so after a stall of our own process
    // the timer would fire while a node's answer already waits to be read: the verdict is
    // deferred to the check phase, after pending I/O has been read, so that only a node that
    // really has not answered counts as timed out.
    timer = setTimeout(
      () =>
        setImmediate(() => {
          for (let index = 0; index < outcomes.length; index++) settle(index, TIMED_OUT);
        }),
      timeout,
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
