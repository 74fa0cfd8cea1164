import {
  type AcquireReply,
  type AttemptContext,
  InvalidOptionError,
  LuaScript,
  type RedisClient,
  type ReleaseReply,
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

const acquireScript = new AcquireScript(deadWaitersLua + acquireLua);
const giveUpScript = new LuaScript(giveUpLua);
const releaseScript = new LuaScript(deadWaitersLua + releaseLua);
const forceReleaseScript = new LuaScript(deadWaitersLua + attemptLua + forceReleaseLua);

/**
 * Redisson's default `fairLockWaitTimeout`: the allowance a waiter adds to the deadline of the
 * waiter ahead of it (or the holder's TTL) when it queues; past its deadline it counts as dead.
 */
export const FAIR_WAIT_ALLOWANCE = 300_000;

/** Options of `FairLockProtocol`. */
export interface FairLockProtocolOptions {
  /**
   * Redisson's `fairLockWaitTimeout` in ms: the allowance of a waiter whose wait is unbounded
   * (a waiter with a bounded wait gets its wait, as in Redisson). Default: `300_000`.
   */
  readonly waitTimeout?: number;
  /** The clock waiter deadlines are written in, epoch ms; Redisson uses each client's own. Default: `Date.now`. */
  readonly now?: () => number;
}

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

  constructor(options: FairLockProtocolOptions = {}) {
    super();
    this.waitTimeout = checkOptionalMs(options.waitTimeout, 'waitTimeout') ?? FAIR_WAIT_ALLOWANCE;
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
    return acquireScript.run(redis, resource, owner, keys, args, ttl, context);
  }

  /** Leaves the queue after a waiting acquire gave up, moving later waiters one allowance closer. */
  async abandon(
    redis: RedisClient,
    resource: string,
    owner: string,
    context?: AttemptContext,
  ): Promise<void> {
    await giveUpScript.run(
      redis,
      [fairQueue(resource), fairTimeouts(resource)],
      [owner, this.allowance(context)],
    );
  }

  override async unlock(
    redis: RedisClient,
    resource: string,
    owner: string,
    lease: number,
    requestId?: string,
  ): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    return unlockWithLatch(
      redis,
      releaseScript,
      resource,
      [
        resource,
        fairQueue(resource),
        fairTimeouts(resource),
        lockChannel(resource),
        attemptLatches(resource, owner),
      ],
      [UNLOCK_MESSAGE, lease, owner, this.now(), publish],
      requestId,
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
