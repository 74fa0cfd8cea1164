import type { BackendExtension } from '../backend.js';
import { pastValidity } from '../engine/deadline.js';
import { QuorumError } from '../errors.js';
import type { RenewalItem } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { decodeTokens, encodeTokens, fallbackToken, type NodeTokens } from './composite-token.js';
import { type OpenContext, unreachableIn } from './connections.js';
import { fanOut, tally } from './fan-out.js';
import { stillValid, validityOf } from './quorum.js';

/** Leases renewed by one script call on one master, so a large renewal never blocks a server for long. */
const RENEWAL_CHUNK = 500;

/**
 * Renews leases on every master at once. A lease counts as renewed only when a majority reset
 * its TTL while ttl − elapsed − drift is still positive; its validity is then ttl − drift,
 * counted from the start of its round (the engine adds it to its send time). A lease is lost
 * only when so many masters answered that they no longer hold it that no majority can (3 of
 * 5, 2 of 4): it is then released everywhere, every hold of its owner (others need not wait
 * out its TTL). Any other shortfall gets a `QuorumError` in its place, which the watchdog
 * retries while the lease is valid: too few answers to tell, or a majority that renewed only
 * after the validity had ended (the lease is still on the masters). Masters never re-create a
 * missing key (the protocol's extend guarantees that). A token this backend did not make
 * renews nothing. With a batching protocol (`extendMany`) each master gets one call per chunk
 * of leases, all chunks in parallel.
 */
export async function extendOnQuorum(
  context: OpenContext,
  items: readonly RenewalItem[],
  ttl: number,
): Promise<(BackendExtension | null | QuorumError)[]> {
  const chunks: RenewalItem[][] = [];
  for (let i = 0; i < items.length; i += RENEWAL_CHUNK) chunks.push(items.slice(i, i + RENEWAL_CHUNK));
  const results = await Promise.all(chunks.map((chunk) => extendChunk(context, chunk, ttl)));
  return results.flat();
}

async function extendChunk(
  context: OpenContext,
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
  const elapsed = context.clock() - start;
  const validity = validityOf(ttl, context.driftFactor);
  const inTime = stillValid(validity, elapsed);
  const renewals = leases.map(
    (_, n): NodeTokens =>
      outcomes.map((outcome) => (outcome.kind === 'ok' ? (outcome.value[n] ?? null) : null)),
  );
  const { ok, failed, timedOut } = tally(outcomes);
  const { quorum } = context;
  // The items share the round's outcomes: a chunk of hundreds failing together needs the
  // masters' connection errors (and the lateness) built once, not once per item. Left undefined,
  // an answer is built again, but then it built no error either.
  let inTimeError: ReturnType<typeof unreachableIn>;
  let lateError: ReturnType<typeof unreachableIn>;
  const errorOptionsFor = (late: boolean) => {
    if (late) {
      lateError ??= unreachableIn(context, outcomes, pastValidity('renewed', elapsed, validity));
      return lateError;
    }
    inTimeError ??= unreachableIn(context, outcomes);
    return inTimeError;
  };

  await Promise.all(
    leases.map(({ item, tokens, i }, n) => {
      const renewed = renewals[n]!;
      const agreed = countTokens(renewed);
      if (agreed >= quorum && inTime) {
        results[i] = { validity, token: encodeTokens(renewed) };
        return undefined;
      }
      const refused = ok - agreed;
      // Lost only when the masters that no longer hold it leave too few for any majority: fewer
      // refusals may be a master that lost the key while the others still hold the lease.
      if (refused > clients.length - quorum) {
        // The engine ends every handle of it, so every hold of the owner goes (the masters that
        // did not answer may still keep one).
        return releaseLeftovers(context, item.resource, item.owner, tokens, { every: true });
      }
      // Not lost, not renewed in time: an outage, not a loss. The lease stays as it is, and ends
      // by its validity unless a later renewal succeeds.
      results[i] = new QuorumError(
        item.resource,
        quorum,
        agreed,
        refused,
        failed,
        timedOut,
        errorOptionsFor(agreed >= quorum),
      );
      return undefined;
    }),
  );
  return results;
}

function countTokens(tokens: NodeTokens): number {
  return tokens.filter((token) => token !== null).length;
}
