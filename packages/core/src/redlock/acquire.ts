import type { BackendGrant, BackendRefusal } from '../backend.js';
import { isUnsureRefusal } from '../clock-skew.js';
import { pastValidity } from '../engine/deadline.js';
import { ClockSkewError, QuorumError } from '../errors.js';
import type { AcquireReply, AttemptContext } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { encodeTokens } from './composite-token.js';
import { type OpenContext, unreachableIn } from './connections.js';
import { fanOut, type NodeOutcome, tally } from './fan-out.js';
import { publishFence } from './fence.js';
import type { QuorumContext } from './options.js';
import { nthLargest, nthSmallest, stillValid, validityOf } from './quorum.js';

type Granted = AcquireReply & { acquired: true };

/**
 * One RedLock attempt: the protocol's acquire on every master at once (a master whose clock is
 * refused fails without being sent it: see `MasterClocks`), a grant only with a
 * majority whose fence reached a majority, while ttl − elapsed − drift is still positive. The
 * grant's validity is ttl − drift, counted from the attempt's start as the backend contract
 * says (the engine adds it to its send time, taken just before). Anything less is undone
 * before answering: released where it was granted, and elsewhere as `releaseLeftovers` undoes
 * an attempt (a re-entry's undo takes nothing off the outer hold). A lost vote is a refusal when
 * the lock is busy and a `QuorumError` when too few masters answered (see `refusalOrError`); a
 * majority that granted only after the validity ended is a `QuorumError` whose `cause` says so,
 * thrown once the grant is undone.
 */
export async function acquireOnQuorum(
  context: OpenContext,
  resource: string,
  owner: string,
  ttl: number,
  attempt?: AttemptContext,
): Promise<BackendGrant | BackendRefusal> {
  const { clients, protocol, quorum } = context;
  const start = context.clock();
  // Set once the attempt is undone: a grant a master answers only afterwards (the client resent
  // the attempt after a reconnect, while the undo sent to it was dropped) is undone there too,
  // when the engine says so (see `AttemptContext.lateGrant`). A fresh owner's late grant to an
  // attempt handed out goes to the engine as well: the hold's release may not have reached it.
  let undone = false;
  // The fence handed out, once decided; until then, the late grants (master, fence) it may have to
  // be given to. A master that granted after the others decided drew a fence of its own, above
  // theirs when its counter was ahead: a later re-entry it answers would report that one.
  let handed: number | undefined;
  const lateFences: [index: number, drawn: number][] = [];
  const outcomes = await fanOut(
    clients,
    context.nodeTimeout,
    (redis, index, settled) =>
      context.clocks.gate(index, resource, settled, () =>
        protocol.acquire(redis, resource, owner, ttl, attempt),
      ),
    (index, reply) => {
      if (!reply.acquired) return;
      if (!undone) {
        if (handed === undefined) lateFences.push([index, reply.fence]);
        else keepFenceOn(context, index, resource, owner, handed, reply.fence);
      }
      if (!undone && !attempt?.fresh) return;
      const undo = () => undoOn(context, resource, owner, index, attempt);
      if (attempt?.lateGrant) attempt.lateGrant(undo);
      else if (undone && !attempt?.fresh) void undo();
    },
  );
  const tokens: (string | null)[] = [];
  const refused: boolean[] = [];
  const replies: (Granted | null)[] = [];
  for (const outcome of outcomes) {
    const reply = outcome.kind === 'ok' ? outcome.value : null;
    tokens.push(reply?.acquired ? reply.token : null);
    refused.push(reply?.acquired === false);
    replies.push(reply?.acquired ? reply : null);
  }
  const grants = replies.filter((reply) => reply !== null);

  if (grants.length >= quorum) {
    // The count a majority has reached: on re-entry the majority that granted the first hold says > 1.
    const holds =
      nthLargest(
        grants.map((grant) => grant.holds),
        quorum,
      ) ?? 1;
    const fence = fenceOf(grants, holds);
    const [publication] = await Promise.all([
      publishFence(context, resource, owner, fence, countersOf(replies, holds)),
      keepFence(context, resource, owner, fence, holds, replies),
    ]);
    const validity = validityOf(leaseOf(grants, quorum, ttl), context.driftFactor);
    const elapsed = context.clock() - start;
    if (publication.published && stillValid(validity, elapsed)) {
      handed = fence;
      for (const [index, drawn] of lateFences) keepFenceOn(context, index, resource, owner, fence, drawn);
      return { acquired: true, fence, holds, token: encodeTokens(tokens), validity };
    }
    undone = true;
    await releaseLeftovers(context, resource, owner, tokens, { skip: refused, attempt });
    if (!publication.published) {
      throw new QuorumError(
        resource,
        quorum,
        publication.atFence,
        0,
        publication.failed,
        publication.timedOut,
        unreachableIn(context, publication.outcomes),
      );
    }
    // Not busy: a majority granted it, so waiting for a holder would wait on nobody. The masters
    // answered too slowly for the ttl (or the clock jumped), which the caller must be told.
    const { ok, failed, timedOut } = tally(outcomes);
    throw new QuorumError(
      resource,
      quorum,
      grants.length,
      ok - grants.length,
      failed,
      timedOut,
      unreachableIn(context, outcomes, pastValidity('granted', elapsed, validity)),
    );
  }

  undone = true;
  await releaseLeftovers(context, resource, owner, tokens, { skip: refused, attempt });
  return refusalOrError(context, resource, outcomes, grants.length);
}

/**
 * Undoes on master `index` alone the grant it answered late to an attempt undone before: as a
 * master that did not answer (no token), so that an owner that is not fresh takes off only that
 * attempt's hold.
 */
function undoOn(
  context: QuorumContext,
  resource: string,
  owner: string,
  index: number,
  attempt: AttemptContext | undefined,
): Promise<void> {
  const others = context.clients.map((_, each) => each !== index);
  const tokens = context.clients.map(() => null);
  return releaseLeftovers(context, resource, owner, tokens, { skip: others, attempt });
}

/**
 * The grant's fence. A re-entry (`holds` > 1: a majority re-entered) keeps the fence of the hold,
 * which the masters that re-entered it hold: a master that had lost the key granted the re-entry
 * as a first acquisition, with a fence it drew for itself, which is not the hold's. Otherwise the
 * grant is a new hold, drawn above every master's counter (see `drawn`).
 */
function fenceOf(grants: readonly Granted[], holds: number): number {
  if (holds > 1) return Math.max(...grants.filter((grant) => grant.holds > 1).map((grant) => grant.fence));
  return Math.max(...grants.map(drawn));
}

/**
 * What a master's grant adds to a new hold's fence. A first acquisition drew its fence there. A
 * re-entry that no majority re-entered answers the owner's hold that this master kept after the
 * lease was lost (an explicit owner's, whose release here was lost): its fence is that old hold's,
 * below what the counter here may have reached since (the fences of later holders, written back
 * here). Should this master be all this majority shares with the one the last fence reached, a
 * fence not above its counter could be below the last holder's: so it stands for a draw above
 * its counter, whatever became of the release.
 */
function drawn(grant: Granted): number {
  if (grant.holds === 1 || grant.counter === undefined) return grant.fence;
  return Math.max(grant.fence, grant.counter) + 1;
}

/**
 * What each master's counter is known to hold, for the write-back (see `publishFence`): a new
 * hold's draw, and for a re-entry the hold's fence, or for a re-entry in a new hold (`drawn`)
 * what it reported of its counter; null where nothing is known.
 */
function countersOf(replies: readonly (Granted | null)[], holds: number): (number | null)[] {
  return replies.map((reply) => {
    if (reply === null) return null;
    if (holds > 1 || reply.holds === 1) return reply.fence;
    return reply.counter ?? null;
  });
}

/**
 * Gives the grant's `fence` to the holds that were not given it: in a re-entry (`holds` > 1), to
 * the masters that granted it as a first acquisition with another fence (see `fenceOf`); in a new
 * hold, to the masters that answered with an old hold of the owner (see `drawn`). A later
 * re-entry they answer then reports it too. It runs alongside the fence write-back, in the same
 * round: a master that misses it matters only to a later re-entry that it answers.
 */
async function keepFence(
  context: QuorumContext,
  resource: string,
  owner: string,
  fence: number,
  holds: number,
  replies: readonly (Granted | null)[],
): Promise<void> {
  const { protocol } = context;
  const reentry = holds > 1;
  const stray = context.clients.filter((_, index) => {
    const reply = replies[index];
    if (reply == null || reply.fence === fence) return false;
    // This master answered the other kind of grant than the one the majority decided on.
    const reentered = reply.holds > 1;
    return reentered !== reentry;
  });
  if (!protocol.keepFence || stray.length === 0) return;
  await fanOut(stray, context.nodeTimeout, (redis) => protocol.keepFence!(redis, resource, owner, fence));
}

/**
 * Gives master `index`'s hold of `owner` the grant's `fence` in the background, when its late
 * grant `drew` another: sent after that grant's reply, it cannot overtake the grant. Lost, it
 * matters only to a later re-entry that master answers (see `keepFence`).
 */
function keepFenceOn(
  context: QuorumContext,
  index: number,
  resource: string,
  owner: string,
  fence: number,
  drew: number,
): void {
  const redis = context.clients[index];
  if (drew === fence || !context.protocol.keepFence || !redis) return;
  context.protocol.keepFence(redis, resource, owner, fence).catch(() => {});
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
  context: OpenContext,
  resource: string,
  outcomes: readonly NodeOutcome<AcquireReply>[],
  agreed: number,
): BackendRefusal {
  const { ok, failed, timedOut } = tally(outcomes);
  const refused = ok - agreed;
  const { quorum } = context;
  if (ok < quorum && refused <= context.clients.length - quorum) {
    throw new QuorumError(
      resource,
      quorum,
      agreed,
      refused,
      failed,
      timedOut,
      unreachableIn(context, outcomes, clockRefusalIn(outcomes)),
    );
  }
  return { acquired: false, remaining: estimateRemaining(outcomes, quorum) };
}

/**
 * The cause of a `QuorumError` masters refused for their clock (found off, or too slow to tell)
 * helped cause: the first refusal.
 */
function clockRefusalIn(outcomes: readonly NodeOutcome<AcquireReply>[]): ErrorOptions | undefined {
  for (const outcome of outcomes) {
    if (outcome.kind !== 'failed') continue;
    if (outcome.error instanceof ClockSkewError || isUnsureRefusal(outcome.error))
      return { cause: outcome.error };
  }
  return undefined;
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
