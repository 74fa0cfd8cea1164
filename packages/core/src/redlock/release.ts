import { randomUUID } from 'node:crypto';
import type { ReleaseWitness } from '../backend.js';
import { QuorumError } from '../errors.js';
import type { ReleaseReply } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { decodeTokens, fallbackToken } from './composite-token.js';
import { type OpenContext, unreachableIn } from './connections.js';
import { fanOut, tally } from './fan-out.js';
import { releaseAttempt } from './release-attempts.js';

/**
 * Gives up one hold on every master, whether or not it granted the lease (a late write may have
 * landed there). It is still held (re-entered) when a majority still counts holds. Once no
 * majority can (those that answered `held` and the silent ones are too few), it was released
 * if a majority answered released or held, else it was not ours if a majority says so; every
 * hold of `owner` that a minority still counts (a release or a re-entry's undo that did not
 * reach it) is then released there too, in one more round. Otherwise the answers cannot tell
 * (a majority may still count a hold, with the silent masters): `QuorumError`, and the caller
 * may retry with the same `id`, which takes off no second hold where this one landed, and counts
 * as released the masters where an earlier attempt freed the key (see `releaseAttempt`). Without
 * an `id` the release is given one of its own: a copy that ioredis resends after a reconnect
 * lost its reply then takes off no second hold of an owner that holds the key more than once.
 * `witness` is told a `not-owner` ran once when the masters that answered it on a connection
 * that did not close meanwhile are too many (over N − quorum) for a majority to still hold the
 * key: a copy of the release resent after a lost reply answers `not-owner` where the first copy
 * freed the key.
 */
export async function releaseOnQuorum(
  context: OpenContext,
  resource: string,
  owner: string,
  token: string,
  id?: string,
  witness?: ReleaseWitness,
): Promise<ReleaseReply> {
  const tokens = decodeTokens(token, context.clients.length);
  if (tokens === null) return 'not-owner';
  const fallback = fallbackToken(tokens, owner);
  const named = id ?? randomUUID();
  const attempt = releaseAttempt(context, id);
  const { connections } = context;
  // The masters whose answer came on the connection the release was sent on.
  const ranOnce: boolean[] = [];
  const outcomes = attempt.merge(
    await fanOut(
      context.clients,
      context.nodeTimeout,
      async (redis, index) => {
        const closes = connections.closesOf(index);
        const reply = await context.protocol.release(
          redis,
          resource,
          owner,
          tokens[index] ?? fallback,
          undefined,
          named,
        );
        ranOnce[index] = connections.closesOf(index) === closes;
        return reply;
      },
      attempt.late,
    ),
  );
  const counts = { released: 0, held: 0, 'not-owner': 0 };
  for (const outcome of outcomes) if (outcome.kind === 'ok') counts[outcome.value]++;
  const { failed, timedOut } = tally(outcomes);
  const { quorum } = context;
  if (counts.held >= quorum) {
    attempt.forget();
    return 'held';
  }
  // Until the silent masters are too few to make a majority of holds, forgetting the hold could
  // leave it counted on a majority, keeping the lock from others for a whole lease.
  if (counts.held + failed + timedOut < quorum) {
    let reply: ReleaseReply | undefined;
    if (counts.released + counts.held >= quorum) reply = 'released';
    else if (counts['not-owner'] > context.clients.length - quorum) {
      reply = 'not-owner';
      if (witness) {
        const once = outcomes.filter(
          (outcome, index) => outcome.kind === 'ok' && outcome.value === 'not-owner' && ranOnce[index],
        );
        witness.ranOnce = once.length > context.clients.length - quorum;
      }
    }
    if (reply) {
      attempt.forget();
      // A master still counting a hold that no majority counts keeps the lock from any majority
      // it is part of, so one more master down makes it unavailable for a whole lease.
      if (counts.held > 0) {
        const freed = outcomes.map((outcome) => outcome.kind !== 'ok' || outcome.value !== 'held');
        await releaseLeftovers(context, resource, owner, tokens, { skip: freed, every: true });
      }
      return reply;
    }
  }
  const agreed = counts.released + counts.held;
  // Enough answered that it was ours, but not whether it is still held: say why there are too few.
  const undecided =
    agreed >= quorum
      ? {
          cause: new Error(
            `${counts.released} released, ${counts.held} still hold: the silent masters decide whether a majority still does`,
          ),
        }
      : undefined;
  throw new QuorumError(
    resource,
    quorum,
    agreed,
    counts['not-owner'],
    failed,
    timedOut,
    unreachableIn(context, outcomes, undecided),
  );
}
