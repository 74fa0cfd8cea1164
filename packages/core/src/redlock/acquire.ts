import type { BackendGrant, BackendRefusal } from '../backend.js';
import { QuorumError } from '../errors.js';
import type { AcquireReply, AttemptContext } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { encodeTokens } from './composite-token.js';
import { fanOut, type NodeOutcome, tally } from './fan-out.js';
import { publishFence } from './fence.js';
import type { QuorumContext } from './options.js';
import { nthLargest, nthSmallest, stillValid, validityOf } from './quorum.js';

type Granted = AcquireReply & { acquired: true };

/**
 * One RedLock attempt: the protocol's acquire on every master at once, a grant only with a
 * majority whose fence reached a majority, while ttl − elapsed − drift is still positive. The
 * grant's validity is ttl − drift, counted from the attempt's start as the backend contract
 * says (the engine adds it to its send time, taken just before). Anything less is released
 * everywhere before answering. A lost vote is a refusal when the lock is busy and a
 * `QuorumError` when too few masters answered (see `refusalOrError`).
 */
export async function acquireOnQuorum(
  context: QuorumContext,
  resource: string,
  owner: string,
  ttl: number,
  attempt?: AttemptContext,
): Promise<BackendGrant | BackendRefusal> {
  const { clients, protocol, quorum } = context;
  const start = context.clock();
  const outcomes = await fanOut(clients, context.nodeTimeout, (redis) =>
    protocol.acquire(redis, resource, owner, ttl, attempt),
  );
  const tokens: (string | null)[] = [];
  const fences: (number | null)[] = [];
  const refused: boolean[] = [];
  const grants: Granted[] = [];
  for (const outcome of outcomes) {
    const reply = outcome.kind === 'ok' ? outcome.value : null;
    tokens.push(reply?.acquired ? reply.token : null);
    fences.push(reply?.acquired ? reply.fence : null);
    refused.push(reply?.acquired === false);
    if (reply?.acquired) grants.push(reply);
  }

  if (grants.length >= quorum) {
    const fence = Math.max(...grants.map((grant) => grant.fence));
    const publication = await publishFence(context, resource, owner, fence, fences);
    const validity = validityOf(leaseOf(grants, quorum, ttl), context.driftFactor);
    if (publication.published && stillValid(validity, context.clock() - start)) {
      // The count a majority has reached: on re-entry the majority that granted the first hold says > 1.
      const holds =
        nthLargest(
          grants.map((grant) => grant.holds),
          quorum,
        ) ?? 1;
      return { acquired: true, fence, holds, token: encodeTokens(tokens), validity };
    }
    await releaseLeftovers(context, resource, owner, tokens, { skip: refused });
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

  await releaseLeftovers(context, resource, owner, tokens, { skip: refused });
  return refusalOrError(context, resource, outcomes, grants.length);
}

/**
 * How long a majority of the granting masters keep the lock: each keeps it for the ttl it
 * reported (a re-entry may keep a longer lease) and the lock stands while `quorum` of them do.
 */
function leaseOf(grants: readonly Granted[], quorum: number, ttl: number): number {
  return (
    nthLargest(
      grants.map((grant) => grant.ttl ?? ttl),
      quorum,
    ) ?? ttl
  );
}

/**
 * A lost vote is a refusal (busy: waiting helps, `tryAcquire` answers null) when the masters
 * that answered could have formed a majority, or when so many refused for another owner that
 * no majority is possible whatever the silent ones would say. Otherwise too few answered for
 * anyone to tell: a `QuorumError` (masters unavailable; fail closed and say so).
 */
function refusalOrError(
  context: QuorumContext,
  resource: string,
  outcomes: readonly NodeOutcome<AcquireReply>[],
  agreed: number,
): BackendRefusal {
  const { ok, failed, timedOut } = tally(outcomes);
  const refused = ok - agreed;
  const { quorum } = context;
  if (ok < quorum && refused <= context.clients.length - quorum) {
    throw new QuorumError(resource, quorum, agreed, refused, failed, timedOut);
  }
  return { acquired: false, remaining: estimateRemaining(outcomes, quorum) };
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
