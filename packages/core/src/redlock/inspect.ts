import { QuorumError } from '../errors.js';
import type { Inspection } from '../protocol.js';
import { type OpenContext, unreachableIn } from './connections.js';
import { fanOut, tally } from './fan-out.js';
import { nthLargest } from './quorum.js';

const free: Inspection = { held: false, ttl: null, owner: null, fence: null, holds: 0 };

/**
 * Reads the lock on every master. It is held when one owner holds it on a majority, for as long
 * as a majority still keeps it (the quorum-th longest remaining TTL); the fence is the largest
 * any master reports. Throws `QuorumError` when too few masters answer to tell, also when no
 * owner holds a majority of those that answered but one could with those that did not.
 */
export async function inspectOnQuorum(context: OpenContext, resource: string): Promise<Inspection> {
  const outcomes = await fanOut(context.clients, context.nodeTimeout, (redis) =>
    context.protocol.inspect(redis, resource),
  );
  const answers = outcomes.flatMap((outcome) => (outcome.kind === 'ok' ? [outcome.value] : []));
  const { failed, timedOut } = tally(outcomes);
  const { quorum } = context;
  const undecided = (given?: ErrorOptions) =>
    new QuorumError(
      resource,
      quorum,
      answers.length,
      0,
      failed,
      timedOut,
      unreachableIn(context, outcomes, given),
    );
  if (answers.length < quorum) throw undecided();

  const fences = answers.flatMap((answer) => (answer.fence === null ? [] : [answer.fence]));
  const fence = fences.length === 0 ? null : Math.max(...fences);
  const byOwner = new Map<string | null, Inspection[]>();
  for (const answer of answers) {
    if (!answer.held) continue;
    const group = byOwner.get(answer.owner) ?? [];
    group.push(answer);
    byOwner.set(answer.owner, group);
  }
  for (const [owner, held] of byOwner) {
    if (held.length < quorum) continue;
    const ttls = held.map((answer) =>
      answer.ttl === null || answer.ttl < 0 ? Number.POSITIVE_INFINITY : answer.ttl,
    );
    const kept = nthLargest(ttls, quorum) ?? 0;
    return {
      held: true,
      ttl: Number.isFinite(kept) ? kept : -1,
      owner,
      fence,
      holds: Math.min(...held.map((answer) => answer.holds)),
    };
  }
  // Free only when no owner could hold a majority with the masters that did not answer: a lock
  // whose majority includes one of them is still held, and `acquire` would be refused.
  const silent = context.clients.length - answers.length;
  const most = Math.max(0, ...[...byOwner.values()].map((held) => held.length));
  if (most + silent >= quorum) {
    const cause = new Error(
      `it is held on ${most} of the ${answers.length} masters that answered: the silent masters decide whether a majority holds it`,
    );
    throw undecided({ cause });
  }
  return { ...free, fence };
}
