import { fallbackToken, type NodeTokens } from './composite-token.js';
import { fanOut } from './fan-out.js';
import type { QuorumContext } from './options.js';

/**
 * Undoes an attempt that will not be handed out: releases on every node it may have written
 * to, including nodes that timed out or failed (their command may still have run). Bounded by
 * the node timeout and never throws; what got no answer is counted and left to expire by TTL.
 * `skip` marks nodes known to hold nothing of ours (they refused); when every node refused,
 * nothing is sent.
 */
export async function releaseLeftovers(
  context: QuorumContext,
  resource: string,
  owner: string,
  tokens: NodeTokens,
  skip: readonly boolean[] = [],
): Promise<void> {
  const targets = context.clients.flatMap((redis, index) => (skip[index] === true ? [] : [{ redis, index }]));
  if (targets.length === 0) return;
  const fallback = fallbackToken(tokens, owner);
  const outcomes = await fanOut(targets, context.nodeTimeout, ({ redis, index }) =>
    context.protocol.release(redis, resource, owner, tokens[index] ?? fallback),
  );
  for (const outcome of outcomes) if (outcome.kind !== 'ok') context.stats.releaseFailures++;
}
