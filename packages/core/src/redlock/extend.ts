import type { BackendExtension } from '../backend.js';
import type { RenewalItem } from '../protocol.js';
import { releaseLeftovers } from './cleanup.js';
import { decodeTokens, encodeTokens, fallbackToken, type NodeTokens } from './composite-token.js';
import { fanOut } from './fan-out.js';
import type { QuorumContext } from './options.js';
import { validityOf } from './quorum.js';

/** Leases renewed by one script call on one master, so a large renewal never blocks a server for long. */
const RENEWAL_CHUNK = 500;

/**
 * Renews leases on every master at once. A lease counts as renewed only when a majority reset
 * its TTL and the validity measured from the start of its round is still positive; a lease that
 * fails is released everywhere (it is lost, so others need not wait out its TTL). Masters never
 * re-create a missing key (the protocol's extend guarantees that). With a batching protocol
 * (`extendMany`) each master gets one call per chunk of leases, all chunks in parallel.
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
  const validity = validityOf(ttl, context.clock() - start, context.driftFactor);

  const results = items.map((_, i): BackendExtension | null => {
    if (nodeTokens[i] === null) return null;
    const renewed: NodeTokens = outcomes.map((outcome) =>
      outcome.kind === 'ok' ? (outcome.value[i] ?? null) : null,
    );
    const agreed = renewed.filter((token) => token !== null).length;
    if (agreed < context.quorum || validity <= 0) return null;
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
