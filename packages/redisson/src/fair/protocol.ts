import { type AcquireReply, LuaScript, type RedisClient, type ReleaseReply } from '@lock/core';
import { RLockProtocol, UNLOCK_MESSAGE } from '../lock/protocol.js';
import { fairQueue, fairTimeouts, lockChannel } from '../names.js';
import { publishCommand } from '../publish.js';
import { acquireReply } from '../replies.js';
import { unlockWithLatch } from '../unlock.js';
import acquireLua from './acquire.lua';
import forceReleaseLua from './force-release.lua';
import giveUpLua from './give-up.lua';
import releaseLua from './release.lua';

const acquireScript = new LuaScript(acquireLua);
const giveUpScript = new LuaScript(giveUpLua);
const releaseScript = new LuaScript(releaseLua);
const forceReleaseScript = new LuaScript(forceReleaseLua);

/** Redisson's default `fairLockWaitTimeout`: how long a queued waiter may go silent before it counts as dead. */
export const FAIR_WAIT_ALLOWANCE = 300_000;

/** How one owner's pending attempts behave: join the queue or not, and with which allowance. */
export interface FairAttempt {
  /** Join the queue when busy (a waiting lock/tryLock) rather than try once. */
  readonly queue: boolean;
  /** The waiter's allowance in ms; Redisson uses the caller's wait when one is given. */
  readonly allowance: number;
}

/**
 * Redisson's RFairLock: the RLock hash plus a FIFO queue and a deadline zset; a release wakes
 * only the head waiter on `redisson_lock__channel:{name}:<owner>`. Times come from the
 * caller's clock (epoch ms), as in Redisson.
 */
export class FairLockProtocol extends RLockProtocol {
  override readonly name = 'redisson-fair';
  private readonly attempts = new Map<string, FairAttempt>();

  constructor(private readonly now: () => number = Date.now) {
    super();
  }

  override channel(resource: string, waiter: string): string {
    return `${lockChannel(resource)}:${waiter}`;
  }

  /** Sets how `owner`'s next attempts on `resource` behave until `forget()`; by default they queue with the 5-minute allowance. */
  expect(resource: string, owner: string, attempt: FairAttempt): void {
    this.attempts.set(attemptKey(resource, owner), attempt);
  }

  forget(resource: string, owner: string): void {
    this.attempts.delete(attemptKey(resource, owner));
  }

  override async acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
  ): Promise<AcquireReply> {
    const { queue, allowance } = this.attempts.get(attemptKey(resource, owner)) ?? {
      queue: true,
      allowance: FAIR_WAIT_ALLOWANCE,
    };
    const reply = await acquireScript.run(
      redis,
      [resource, fairQueue(resource), fairTimeouts(resource)],
      [ttl, owner, allowance, this.now(), queue ? 1 : 0],
    );
    return this.fences.settle(resource, owner, acquireReply(reply, ttl));
  }

  /** Leaves the queue after a waiting attempt gave up, shifting later waiters by `allowance`. */
  async giveUp(redis: RedisClient, resource: string, owner: string, allowance: number): Promise<void> {
    await giveUpScript.run(redis, [fairQueue(resource), fairTimeouts(resource)], [owner, allowance]);
  }

  override async unlock(
    redis: RedisClient,
    resource: string,
    owner: string,
    lease: number,
  ): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    const reply = await unlockWithLatch(
      redis,
      releaseScript,
      resource,
      [resource, fairQueue(resource), fairTimeouts(resource), lockChannel(resource)],
      [UNLOCK_MESSAGE, lease, owner, this.now(), publish],
    );
    if (reply !== 'held') this.fences.forget(resource, owner);
    return reply;
  }

  override async forceUnlock(redis: RedisClient, resource: string): Promise<boolean> {
    const publish = await publishCommand(redis);
    const reply = await forceReleaseScript.run(
      redis,
      [resource, fairQueue(resource), fairTimeouts(resource), lockChannel(resource)],
      [UNLOCK_MESSAGE, this.now(), publish],
    );
    return reply === 1;
  }
}

const attemptKey = (resource: string, owner: string): string => `${owner}\n${resource}`;
