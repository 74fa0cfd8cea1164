import {
  type AcquireReply,
  type AttemptContext,
  InvalidOptionError,
  LuaScript,
  type RedisClient,
  type ReleaseReply,
  refuseUnknown,
  WholeScript,
} from '@lock/core';
import { AcquireScript } from '../attempt.js';
import attemptLua from '../attempt.lua';
import { RLockProtocol, UNLOCK_MESSAGE } from '../lock/protocol.js';
import {
  attemptLatches,
  attemptLatchPrefix,
  fairQueue,
  fairTimeouts,
  fenceCounter,
  lockChannel,
} from '../names.js';
import { checkOptionalMs } from '../options.js';
import { publishCommand } from '../publish.js';
import { unlockWithLatch } from '../unlock.js';
import acquireLua from './acquire.lua';
import deadWaitersLua from './dead-waiters.lua';
import forceReleaseLua from './force-release.lua';
import giveUpLua from './give-up.lua';
import releaseLua from './release.lua';
import turnLua from './turn.lua';
import undoLua from './undo.lua';

const acquireScript = new AcquireScript(deadWaitersLua + turnLua + acquireLua);
/**
 * Sent whole (`WholeScript`): a waiter gives up on an abort or at its deadline, with the caller's
 * rejection waiting on it, and stays queued ahead of others until it lands.
 */
const giveUpScript = new WholeScript(deadWaitersLua + turnLua + giveUpLua);
/**
 * Sent whole (`WholeScript`): an undo runs only when a reply came too late, on a failing
 * connection, while the grant it gives back is held by nobody.
 */
const undoScript = new WholeScript(attemptLua + deadWaitersLua + turnLua + undoLua);
const releaseScript = new LuaScript(deadWaitersLua + attemptLua + releaseLua);
const forceReleaseScript = new LuaScript(deadWaitersLua + attemptLua + forceReleaseLua);

/**
 * Redisson's default `fairLockWaitTimeout`: the allowance a waiter adds to the deadline of the
 * waiter ahead of it (or the holder's TTL) when it queues; past its deadline it counts as dead.
 */
export const FAIR_WAIT_ALLOWANCE = 300_000;

/**
 * How long a turn is kept by default: core's default longest backoff (1 s) plus two default
 * command timeouts (500 ms), the longest a waiting call goes between two attempts landing.
 */
const TURN_GRACE = 2_000;

/** Options of `FairLockProtocol`. */
export interface FairLockProtocolOptions {
  /**
   * Redisson's `fairLockWaitTimeout` in ms: the allowance of a waiter whose wait is unbounded
   * (a waiter with a bounded wait gets its wait, as in Redisson). Default: `300_000`.
   */
  readonly waitTimeout?: number;
  /** The clock waiter deadlines are written in, epoch ms; Redisson uses each client's own. Default: `Date.now`. */
  readonly now?: () => number;
  /**
   * How long, in ms, a waiter's turn is kept when a grant whose reply came too late is given back
   * (see `undo`) by a caller that passes no attempt context with a queue lease; the engine's
   * context gives that lease (the call's longest backoff plus two command timeouts). Default:
   * `2_000` (core's defaults).
   */
  readonly turnGrace?: number;
}

const FAIR_OPTIONS: readonly (keyof FairLockProtocolOptions)[] = ['waitTimeout', 'turnGrace', 'now'];

/**
 * Redisson's RFairLock: the RLock hash plus a FIFO queue and a deadline zset; a release wakes
 * only the head waiter on `redisson_lock__channel:{name}:<owner>`. An attempt joins the queue
 * only when its acquire call may wait (`context.wait > 0`; without a context it does, as Java's
 * `lock()`), and a waiter that gives up leaves the queue through `abandon`.
 */
export class FairLockProtocol extends RLockProtocol {
  override readonly name = 'redisson-fair';
  private readonly waitTimeout: number;
  private readonly now: () => number;
  private readonly turnGrace: number;

  constructor(options: FairLockProtocolOptions = {}) {
    super();
    refuseUnknown(options, FAIR_OPTIONS, 'the FairLockProtocol options');
    this.waitTimeout = checkOptionalMs(options.waitTimeout, 'waitTimeout') ?? FAIR_WAIT_ALLOWANCE;
    this.turnGrace = checkOptionalMs(options.turnGrace, 'turnGrace') ?? TURN_GRACE;
    const now = options.now ?? Date.now;
    if (typeof now !== 'function') throw new InvalidOptionError('now', now, 'a function answering epoch ms');
    this.now = now;
  }

  override channel(resource: string, waiter: string): string {
    return `${lockChannel(resource)}:${waiter}`;
  }

  override async acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
    context?: AttemptContext,
  ): Promise<AcquireReply> {
    const queue = (context?.wait ?? Number.POSITIVE_INFINITY) > 0;
    const keys = [resource, fairQueue(resource), fairTimeouts(resource), fenceCounter(resource)];
    const args = [ttl, owner, this.allowance(context), this.now(), queue ? 1 : 0];
    // An attempt that may not wait takes no turn to keep: its latch says so to `undo`.
    const named = !queue && context?.attempt ? { ...context, attempt: `${context.attempt}!` } : context;
    return acquireScript.run(redis, resource, owner, keys, args, ttl, named);
  }

  /**
   * Leaves the queue after a waiting acquire gave up, moving later waiters one allowance closer;
   * a grant kept for it (see `undo`) is freed for the head of the queue, or only taken off when
   * the same thread holds the lock besides (re-entered through an RLock handle meanwhile).
   */
  async abandon(
    redis: RedisClient,
    resource: string,
    owner: string,
    context?: AttemptContext,
  ): Promise<void> {
    const publish = await publishCommand(redis);
    await giveUpScript.run(
      redis,
      [
        fairQueue(resource),
        fairTimeouts(resource),
        resource,
        lockChannel(resource),
        attemptLatches(resource, owner),
      ],
      [owner, this.allowance(context), this.now(), publish, UNLOCK_MESSAGE],
    );
  }

  /**
   * Gives back the hold acquire attempt `attempt` added, once however often it is sent. Its
   * owner's last hold, given back while others wait, is not freed when the attempt could wait
   * and its call has not `ended`: the owner was served in its turn and its call still waits (the
   * engine undoes an attempt whose reply came too late, after a slow or dropped connection), so
   * the lock stays with it until its next attempt may land (the engine's queue lease for the
   * call, `context.queueLease`: its longest backoff and two round trips; `turnGrace` ms without
   * one), for that attempt to claim; its giving up
   * (`abandon`, sent after this undo) frees it, and otherwise it expires. Keeping it wakes the
   * head of the queue, which polls again and then sleeps no longer than the kept grant (nothing
   * is published when it expires). Any other last hold is freed as `unlock` frees it.
   */
  override async undo(
    redis: RedisClient,
    resource: string,
    owner: string,
    _token: string,
    attempt: string,
    context?: AttemptContext,
  ): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    const reply = await undoScript.run(redis, freeingKeys(resource, owner), [
      owner,
      attempt,
      context?.queueLease || this.turnGrace,
      this.now(),
      publish,
      UNLOCK_MESSAGE,
      context?.ended ? 1 : 0,
    ]);
    if (reply === 1) return 'released';
    return reply === 0 ? 'held' : 'not-owner';
  }

  override async unlock(
    redis: RedisClient,
    resource: string,
    owner: string,
    lease: number,
    requestId?: string,
    attempt = '',
  ): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    return unlockWithLatch(
      redis,
      releaseScript,
      resource,
      freeingKeys(resource, owner),
      [UNLOCK_MESSAGE, lease, owner, this.now(), publish],
      requestId,
      undefined,
      [attempt],
    );
  }

  override async forceUnlock(redis: RedisClient, resource: string): Promise<boolean> {
    const publish = await publishCommand(redis);
    const reply = await forceReleaseScript.run(
      redis,
      [
        resource,
        fairQueue(resource),
        fairTimeouts(resource),
        lockChannel(resource),
        attemptLatchPrefix(resource),
      ],
      [UNLOCK_MESSAGE, this.now(), publish],
    );
    return reply === 1;
  }

  /** A waiter's allowance, as Redisson computes it: its own wait when bounded, else `waitTimeout`. */
  private allowance(context: AttemptContext | undefined): number {
    const wait = context?.wait ?? Number.POSITIVE_INFINITY;
    return wait > 0 && Number.isFinite(wait) ? wait : this.waitTimeout;
  }
}

/** The keys of the scripts that may free an owner's hold: the lock, the queue, its deadlines, the waiters' channel prefix, the owner's attempt latches. */
function freeingKeys(resource: string, owner: string): string[] {
  return [
    resource,
    fairQueue(resource),
    fairTimeouts(resource),
    lockChannel(resource),
    attemptLatches(resource, owner),
  ];
}
