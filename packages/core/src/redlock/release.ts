import { QuorumError } from '../errors.js';
import type { ReleaseReply } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { decodeTokens, fallbackToken } from './composite-token.js';
import { fanOut, tally } from './fan-out.js';
import type { QuorumContext } from './options.js';

/**
 * Gives up one hold on every master, whether or not it granted the lease (a late write may have
 * landed there). The lease was ours if a majority answered released or held; it is still held
 * (re-entered) if a majority still counts holds; it was not ours if a majority says so. Once
 * released with a majority known free, every hold of `owner` that a minority still counts (a
 * release or a re-entry's undo that did not reach it) is released there too, in one more round.
 * With too few answers to tell, throws `QuorumError`: the caller's keys expire by TTL.
 */
export async function releaseOnQuorum(
  context: QuorumContext,
  resource: string,
  owner: string,
  token: string,
  id?: string,
): Promise<ReleaseReply> {
  const tokens = decodeTokens(token, context.clients.length);
  if (tokens === null) return 'not-owner';
  const fallback = fallbackToken(tokens, owner);
  const outcomes = await fanOut(context.clients, context.nodeTimeout, (redis, index) =>
    context.protocol.release(redis, resource, owner, tokens[index] ?? fallback, undefined, id),
  );
  const counts = { released: 0, held: 0, 'not-owner': 0 };
  for (const outcome of outcomes) if (outcome.kind === 'ok') counts[outcome.value]++;
  const { quorum } = context;
  if (counts.held >= quorum) return 'held';
  if (counts.released + counts.held >= quorum) {
    // A master still counting a hold that a majority no longer counts keeps the lock from any
    // majority it is part of, so one more master down makes it unavailable for a whole lease.
    // Only when a majority is known free: a silent master may still count a hold with it.
    if (counts.held > 0 && counts.released + counts['not-owner'] >= quorum) {
      const freed = outcomes.map((outcome) => outcome.kind !== 'ok' || outcome.value !== 'held');
      await releaseLeftovers(context, resource, owner, tokens, { skip: freed, every: true });
    }
    return 'released';
  }
  if (counts['not-owner'] > context.clients.length - quorum) return 'not-owner';
  const { failed, timedOut } = tally(outcomes);
  throw new QuorumError(
    resource,
    quorum,
    counts.released + counts.held,
    counts['not-owner'],
    failed,
    timedOut,
  );
}
