import { randomUUID } from 'node:crypto';
import type { AttemptContext } from '../protocol.js';
import { fallbackToken, type NodeTokens } from './composite-token.js';
import { fanOut } from './fan-out.js';
import type { QuorumContext } from './options.js';

/**
 * Undoes an attempt that will not be handed out: releases on every node it may have written
 * to, including nodes that timed out or failed (their command may still have run). Bounded by
 * the node timeout and never throws; what got no answer is counted and left to expire by TTL.
 * `skip` marks nodes not to send to (an attempt's: known to hold nothing of ours, they refused);
 * when every node is skipped, nothing is sent. With `every`, each node gives up every hold of
 * `owner`, not one: for a lease found lost, whose handles will all answer `not-owner` and send
 * nothing, and for the holds a minority still counts after a majority released.
 *
 * `attempt` is the context of the acquire attempt undone. When its owner is not fresh (a
 * re-entry, an explicit owner), every node is sent the protocol's `undo` of that attempt, which
 * takes off only what that attempt added there; without one, a node that did not grant it (no
 * token) is sent nothing (the attempt may never have run there, and the holds found are the
 * owner's earlier ones, still in use) and one that did is released. A fresh owner's hold can
 * only be the attempt's own, so it is released everywhere.
 *
 * Each release that takes off one hold carries an id, the attempt's when there is one: ioredis
 * resends a command whose reply a reconnect lost, and a copy of a release already applied would
 * take off a second hold where the owner holds the key more than once (an explicit owner's earlier
 * hold, or the hold a re-entry entered), one still in use. With `every` none is needed: the
 * releases go on until the owner holds nothing there.
 */
export async function releaseLeftovers(
  context: QuorumContext,
  resource: string,
  owner: string,
  tokens: NodeTokens,
  {
    skip = [],
    every = false,
    attempt,
  }: { skip?: readonly boolean[]; every?: boolean; attempt?: AttemptContext } = {},
): Promise<void> {
  const { protocol } = context;
  // Without an id (a direct caller's attempt) the attempt cannot be told from the owner's others.
  const scoped = attempt?.fresh ? undefined : attempt?.attempt || undefined;
  /**
   * The attempt to undo on node `index` rather than release: one it did not grant, and one it
   * did when the format undoes by attempt (that grant's lease may have ended, and the owner have
   * taken the key there again since: a release would take off that newer hold).
   */
  const undoneOn = (index: number) => (tokens[index] === null || protocol.undo ? scoped : undefined);
  const targets = context.clients.flatMap((redis, index) =>
    skip[index] === true || (undoneOn(index) !== undefined && !protocol.undo) ? [] : [{ redis, index }],
  );
  if (targets.length === 0) return;
  const fallback = fallbackToken(tokens, owner);
  const id = every ? undefined : attempt?.attempt || randomUUID();
  const outcomes = await fanOut(targets, context.nodeTimeout, async ({ redis, index }) => {
    const undone = undoneOn(index);
    if (undone !== undefined) {
      await protocol.undo?.(redis, resource, owner, fallback, undone);
      return;
    }
    const release = () => protocol.release(redis, resource, owner, tokens[index] ?? fallback, undefined, id);
    let reply = await release();
    // Each release takes off one hold, so this ends when the count does.
    while (every && reply === 'held') reply = await release();
  });
  for (const outcome of outcomes) if (outcome.kind !== 'ok') context.stats.releaseFailures++;
}
