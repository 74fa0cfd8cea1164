import type { BackendExtension } from '../backend.js';
import { QuorumError } from '../errors.js';
import type { RenewalItem } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { decodeTokens, encodeTokens, fallbackToken, type NodeTokens } from './composite-token.js';
import { fanOut, tally } from './fan-out.js';
import type { QuorumContext } from './options.js';
import { stillValid, validityOf } from './quorum.js';

/** Leases renewed by one script call on one master, so a large renewal never blocks a server for long. */
const RENEWAL_CHUNK = 500;

/**
 * Renews leases on every master at once. A lease counts as renewed only when a majority reset
 * its TTL while ttl − elapsed − drift is still positive; its validity is then ttl − drift,
 * counted from the start of its round (the engine adds it to its send time). A lease that
 * fails is released everywhere, every hold of its owner (it is lost, so others need not wait
 * out its TTL). Masters never re-create a missing key (the protocol's extend guarantees that).
 * A token this backend did not make renews nothing. With a batching protocol
 * (`extendMany`) each master gets one call per chunk of leases, all chunks in parallel.
 * A lease too few masters answered for to tell whether it is still held gets a `QuorumError`
 * in its place; the others of the round are still renewed or found lost (and released).
 */
export async function extendOnQuorum(
  context: QuorumContext,
  items: readonly RenewalItem[],
  ttl: number,
): Promise<(BackendExtension | null | QuorumError)[]> {
  const chunks: RenewalItem[][] = [];
  for (let i = 0; i < items.length; i += RENEWAL_CHUNK) chunks.push(items.slice(i, i + RENEWAL_CHUNK));
  const results = await Promise.all(chunks.map((chunk) => extendChunk(context, chunk, ttl)));
  return results.flat();
}

async function extendChunk(
  context: QuorumContext,
  items: readonly RenewalItem[],
  ttl: number,
): Promise<(BackendExtension | null | QuorumError)[]> {
  const { clients, protocol } = context;
  const results: (BackendExtension | null | QuorumError)[] = items.map(() => null);
  // A token this backend did not make names no lease of ours: it renews nothing, anywhere.
  const leases = items.flatMap((item, i) => {
    const tokens = decodeTokens(item.token, clients.length);
    return tokens ? [{ item, tokens, i }] : [];
  });
  if (leases.length === 0) return results;
  const start = context.clock();
  const outcomes = await fanOut(clients, context.nodeTimeout, (redis, index) => {
    const nodeItems = leases.map(({ item, tokens }) => ({
      ...item,
      token: tokens[index] ?? fallbackToken(tokens, item.owner),
    }));
    if (protocol.extendMany) return protocol.extendMany(redis, nodeItems, ttl);
    return Promise.all(
      nodeItems.map((item) => protocol.extend(redis, item.resource, item.owner, item.token, ttl)),
    );
  });
  const validity = validityOf(ttl, context.driftFactor);
  const inTime = stillValid(validity, context.clock() - start);
  const renewals = leases.map(
    (_, n): NodeTokens =>
      outcomes.map((outcome) => (outcome.kind === 'ok' ? (outcome.value[n] ?? null) : null)),
  );
  const { ok, failed, timedOut } = tally(outcomes);
  const { quorum } = context;
  // A lease that more than N − quorum answering masters no longer hold is lost whatever the others say.
  const refusedBy = (renewed: NodeTokens) => ok - countTokens(renewed);
  const lost = (renewed: NodeTokens) => refusedBy(renewed) > clients.length - quorum;

  await Promise.all(
    leases.map(({ item, tokens, i }, n) => {
      const renewed = renewals[n]!;
      if (countTokens(renewed) >= quorum && inTime) {
        results[i] = { validity, token: encodeTokens(renewed) };
        return undefined;
      }
      if (ok < quorum && !lost(renewed)) {
        // Too few masters answered to tell whether this lease is still ours: an outage, not a
        // loss. It stays as it is, and ends by its validity unless a later renewal succeeds.
        results[i] = new QuorumError(
          item.resource,
          quorum,
          countTokens(renewed),
          refusedBy(renewed),
          failed,
          timedOut,
        );
        return undefined;
      }
      // Lost: the engine ends every handle of it, so every hold of the owner goes (the masters
      // that did not answer may still keep one).
      return releaseLeftovers(context, item.resource, item.owner, tokens, { every: true });
    }),
  );
  return results;
}

function countTokens(tokens: NodeTokens): number {
  return tokens.filter((token) => token !== null).length;
}
