import { fanOut } from './fan-out.js';
import type { QuorumContext } from './options.js';

/** Whether the fence reached a majority, and how the write-back round went. */
export interface FencePublication {
  readonly published: boolean;
  readonly atFence: number;
  readonly failed: number;
  readonly timedOut: number;
}

/**
 * The write half of the quorum max-register. `fence` is the largest counter the agreeing nodes
 * returned; once a majority of nodes hold a counter of at least `fence`, every later majority
 * shares a node with it, so the next first acquisition there increments past `fence` and fences
 * strictly increase across owners even when different majorities serve them. Nodes already known
 * to be at `fence` are not written; when they alone form a majority no round trip is spent.
 * Each node written also stores `fence` with `owner`'s hold there, so that a re-entry answered
 * by another majority reports the same fence, not a lower one a node drew for itself.
 */
export async function publishFence(
  context: QuorumContext,
  resource: string,
  owner: string,
  fence: number,
  known: readonly (number | null)[],
): Promise<FencePublication> {
  const reached = known.map((value) => value !== null && value >= fence);
  let atFence = reached.filter(Boolean).length;
  if (atFence >= context.quorum) return { published: true, atFence, failed: 0, timedOut: 0 };
  let failed = 0;
  let timedOut = 0;
  const outcomes = await fanOut(context.clients, context.nodeTimeout, async (redis, index) => {
    if (reached[index] !== true) await context.protocol.raiseFence(redis, resource, fence, owner);
  });
  atFence = 0;
  for (const outcome of outcomes) {
    if (outcome.kind === 'ok') atFence++;
    else if (outcome.kind === 'failed') failed++;
    else timedOut++;
  }
  return { published: atFence >= context.quorum, atFence, failed, timedOut };
}
