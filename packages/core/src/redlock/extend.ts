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
 * fails is released everywhere (it is lost, so others need not wait out its TTL). Masters never
 * re-create a missing key (the protocol's extend guarantees that). With a batching protocol
 * (`extendMany`) each master gets one call per chunk of leases, all chunks in parallel.
 * Throws `QuorumError` when too few masters answered to tell whether a lease is still held.
 */
export async function extendOnQuorum(
  context: QuorumContext,
  items: readonly RenewalItem[],
  ttl: number,
): Promise<(BackendExtension | null)[]> {
  const chunks: RenewalItem[][] = [];
  for (let i = 0; i < items.length; i += RENEWAL_CHUNK) chunks.push(items.slice(i, i + RENEWAL_CHUNK));
  const results = await Promise.all(chunks.map((chunk) => extendChunk(context, chunk, ttl)));
  return results.flat();
}

async function extendChunk(
  context: QuorumContext,
  items: readonly RenewalItem[],
  ttl: number,
): Promise<(BackendExtension | null)[]> {
  const { clients, protocol } = context;
  const nodeTokens = items.map((item) => decodeTokens(item.token, clients.length));
  const itemsFor = (index: number) =>
    items.map((item, i) => {
      const tokens = nodeTokens[i];
      return { ...item, token: tokens ? (tokens[index] ?? fallbackToken(tokens, item.owner)) : item.token };
    });
  const start = context.clock();
  const outcomes = await fanOut(clients, context.nodeTimeout, (redis, index) => {
    const nodeItems = itemsFor(index);
    if (protocol.extendMany) return protocol.extendMany(redis, nodeItems, ttl);
    return Promise.all(
      nodeItems.map((item) => protocol.extend(redis, item.resource, item.owner, item.token, ttl)),
    );
  });
  const validity = validityOf(ttl, context.driftFactor);
  const inTime = stillValid(validity, context.clock() - start);
  const renewals = items.map(
    (_, i): NodeTokens =>
      outcomes.map((outcome) => (outcome.kind === 'ok' ? (outcome.value[i] ?? null) : null)),
  );
  const { ok, failed, timedOut } = tally(outcomes);
  const { quorum } = context;
  // A lease that more than N − quorum answering masters no longer hold is lost whatever the others say.
  const refusedBy = (renewed: NodeTokens) => ok - countTokens(renewed);
  const undecided = renewals.findIndex((renewed) => refusedBy(renewed) <= clients.length - quorum);
  if (ok < quorum && undecided >= 0) {
    // Too few masters answered to tell whether a lease is still ours: an outage, not a loss.
    // The leases stay as they are; each ends by its own validity unless a later renewal succeeds.
    const renewed = renewals[undecided] ?? [];
    const agreed = countTokens(renewed);
    const resource = items[undecided]?.resource ?? '';
    throw new QuorumError(resource, quorum, agreed, refusedBy(renewed), failed, timedOut);
  }

  const results = renewals.map((renewed, i): BackendExtension | null => {
    if (nodeTokens[i] === null || countTokens(renewed) < quorum || !inTime) return null;
    return { validity, token: encodeTokens(renewed) };
  });

  await Promise.all(
    items.map((item, i) => {
      const tokens = nodeTokens[i];
      if (results[i] !== null || !tokens) return undefined;
      return releaseLeftovers(context, item.resource, item.owner, tokens);
    }),
  );
  return results;
}

function countTokens(tokens: NodeTokens): number {
  return tokens.filter((token) => token !== null).length;
}
