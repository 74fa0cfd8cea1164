import type { AcquireReply, AttemptContext, LockProtocol, RedisClient } from '../protocol.js';
import { fanOut, type NodeOutcome } from './fan-out.js';
import type { QuorumContext } from './options.js';

/**
 * Fences from this value up were seeded from a master's clock (microseconds since the epoch:
 * 2^50 µs is September 2005); counters below it were never seeded (an INCR just made them, or
 * an earlier version drew them), and none gets there by increments.
 */
export const SEEDED_FENCE = 2 ** 50;

/**
 * One master's acquire, with a counter below `SEEDED_FENCE` first raised to the master's clock in
 * µs (`TIME`): the grant reports that value, and the owner's hold there keeps it.
 *
 * Why: a master restarted without persistence has lost its counter, and it may be the only
 * master a later majority shares with the majority that holds the last fence (`publishFence`).
 * Counting again from 1 there, the next fence would go backwards. A clock bounds every counter
 * instead: one seeded at time t and incremented since is at most the clock now (a master runs
 * fewer than one acquisition per µs), and the write-back only copies such values between
 * masters. So the seed of a counter made after a restart is above anything the lost counter
 * reached, provided the master stayed down longer than its clock is off the other masters'
 * (a restart waits out the longest ttl anyway) and its clock did not step back meanwhile. The
 * master a new majority shares with the publishing one then either kept its counter (at least
 * the fence) or restarted (seeded above it), and the next first acquisition draws above the
 * fence. Every reply below the floor is seeded, not only the one that made the counter: a
 * second acquisition can draw 2 before the first one's seed lands. A re-entry reports the
 * fence its hold was given and draws nothing.
 */
export async function seededAcquire(
  protocol: LockProtocol & Required<Pick<LockProtocol, 'raiseFence'>>,
  redis: RedisClient,
  resource: string,
  owner: string,
  ttl: number,
  attempt?: AttemptContext,
): Promise<AcquireReply> {
  const reply = await protocol.acquire(redis, resource, owner, ttl, attempt);
  if (!reply.acquired || reply.holds > 1 || reply.fence >= SEEDED_FENCE) return reply;
  const [seconds, micros] = await redis.time();
  // A master whose clock reads before 2005 is seeded on every grant; its counter never goes down.
  const fence = Math.max(Number(seconds) * 1e6 + Number(micros), reply.fence);
  await protocol.raiseFence(redis, resource, fence, owner);
  return { ...reply, fence };
}

/** Whether the fence reached a majority, and how the write-back round went. */
export interface FencePublication {
  readonly published: boolean;
  readonly atFence: number;
  readonly failed: number;
  readonly timedOut: number;
  /** Each master's outcome of the write-back round; none when no round was needed. */
  readonly outcomes: readonly NodeOutcome<void>[];
}

/**
 * The write half of the quorum max-register. `fence` is the largest counter the agreeing nodes
 * returned (or one above the larger of an owner's old hold's fence and the counter a node
 * reported with it: see `drawn` in acquire.ts), and `known` what each node's counter is known to hold. Once a majority of nodes
 * hold a counter of at least `fence`, every later majority shares a node with it, so the next
 * new hold draws past `fence` there and fences strictly increase across owners even when
 * different majorities serve them. Nodes already known to be at `fence` are not written; when
 * they alone form a majority no round trip is spent. Each node written also stores `fence` with
 * `owner`'s hold there, so that a re-entry answered by another majority reports the same fence,
 * not a lower one a node drew for itself. A node that lost its counter (restarted without
 * persistence) keeps the argument only because its new counter is seeded above the old one (see
 * `seededAcquire`).
 */
export async function publishFence(
  context: QuorumContext,
  resource: string,
  owner: string,
  fence: number,
  known: readonly (number | null)[],
): Promise<FencePublication> {
  const reached = known.map((value) => value !== null && value >= fence);
  let atFence = reached.filter(Boolean).length;
  if (atFence >= context.quorum) return { published: true, atFence, failed: 0, timedOut: 0, outcomes: [] };
  let failed = 0;
  let timedOut = 0;
  const outcomes = await fanOut(context.clients, context.nodeTimeout, async (redis, index) => {
    if (reached[index] !== true) await context.protocol.raiseFence(redis, resource, fence, owner);
  });
  atFence = 0;
  for (const outcome of outcomes) {
    if (outcome.kind === 'ok') atFence++;
    else if (outcome.kind === 'failed') failed++;
    else timedOut++;
  }
  return { published: atFence >= context.quorum, atFence, failed, timedOut, outcomes };
}
