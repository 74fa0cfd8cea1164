import type { BackendGrant, BackendRefusal } from '../backend.js';
import { QuorumError } from '../errors.js';
import type { AcquireReply } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { encodeTokens } from './composite-token.js';
import { fanOut, type NodeOutcome, tally } from './fan-out.js';
import { publishFence } from './fence.js';
import type { QuorumContext } from './options.js';
import { nthLargest, nthSmallest, validityOf } from './quorum.js';

/**
 * One RedLock attempt: the protocol's acquire on every master at once, a grant only with a
 * majority whose fence reached a majority and whose validity (ttl − elapsed − drift, from the
 * attempt's start) is still positive. Anything less is released everywhere before answering.
 * Throws `QuorumError` when too few masters answered for a majority to be possible.
 */
export async function acquireOnQuorum(
  context: QuorumContext,
  resource: string,
  owner: string,
  ttl: number,
): Promise<BackendGrant | BackendRefusal> {
  const { clients, protocol, quorum } = context;
  const start = context.clock();
  const outcomes = await fanOut(clients, context.nodeTimeout, (redis) =>
    protocol.acquire(redis, resource, owner, ttl),
  );
  const replies = outcomes.map((outcome) => (outcome.kind === 'ok' ? outcome.value : null));
  const tokens = replies.map((reply) => (reply?.acquired ? reply.token : null));
  const fences = replies.map((reply) => (reply?.acquired ? reply.fence : null));
  const grants = replies.filter(
    (reply): reply is AcquireReply & { acquired: true } => reply?.acquired === true,
  );
  const refusedNodes = replies.map((reply) => reply?.acquired === false);

  if (grants.length >= quorum) {
    const fence = Math.max(...grants.map((grant) => grant.fence));
    const publication = await publishFence(context, resource, fence, fences);
    const validity = validityOf(ttl, context.clock() - start, context.driftFactor);
    if (publication.published && validity > 0) {
      // The count a majority has reached: on re-entry the majority that granted the first hold says > 1.
      const holds =
        nthLargest(
          grants.map((grant) => grant.holds),
          quorum,
        ) ?? 1;
      return { acquired: true, fence, holds, token: encodeTokens(tokens), validity };
    }
    await releaseLeftovers(context, resource, owner, tokens, refusedNodes);
    if (!publication.published) {
      throw new QuorumError(
        resource,
        quorum,
        publication.atFence,
        0,
        publication.failed,
        publication.timedOut,
      );
    }
    return { acquired: false, remaining: -1 };
  }

  await releaseLeftovers(context, resource, owner, tokens, refusedNodes);
  return refusalOrError(context, resource, outcomes, grants.length);
}

/**
 * A lost vote is a refusal when the masters that answered could have formed a majority (the
 * lock is contended; waiting helps), and a `QuorumError` when too few answered for any owner to
 * win (masters are down; fail closed and say so).
 */
function refusalOrError(
  context: QuorumContext,
  resource: string,
  outcomes: readonly NodeOutcome<AcquireReply>[],
  agreed: number,
): BackendRefusal {
  const { ok, failed, timedOut } = tally(outcomes);
  if (ok < context.quorum) {
    throw new QuorumError(resource, context.quorum, agreed, ok - agreed, failed, timedOut);
  }
  return { acquired: false, remaining: estimateRemaining(outcomes, context.quorum) };
}

/**
 * When a majority will be free: the nodes we just released are free now, each refusing node
 * frees after its holder's remaining ms, so the lock frees when the quorum-th of those does.
 * -1 when that cannot be told (too many nodes silent or holding keys without a TTL).
 */
function estimateRemaining(outcomes: readonly NodeOutcome<AcquireReply>[], quorum: number): number {
  const freeAfter: number[] = [];
  for (const outcome of outcomes) {
    if (outcome.kind !== 'ok') continue;
    const reply = outcome.value;
    if (reply.acquired) freeAfter.push(0);
    else if (reply.remaining >= 0) freeAfter.push(reply.remaining);
  }
  return nthSmallest(freeAfter, quorum) ?? -1;
}
