import {
  type AcquireReply,
  type Inspection,
  LuaScript,
  type RedisClient,
  type ReleaseReply,
  type RenewalItem,
} from '@lock/core';
import { HashLockProtocol } from '../hash-protocol.js';
import { readKeyPrefix, readTimeoutPrefix, rwChannel } from '../names.js';
import { publishCommand } from '../publish.js';
import { acquireReply } from '../replies.js';
import { unlockWithLatch } from '../unlock.js';
import forceReleaseLua from './force-release.lua';
import readAcquireLua from './read-acquire.lua';
import readReleaseLua from './read-release.lua';
import readRenewLua from './read-renew.lua';
import writeAcquireLua from './write-acquire.lua';
import writeReleaseLua from './write-release.lua';

const readAcquireScript = new LuaScript(readAcquireLua);
const readReleaseScript = new LuaScript(readReleaseLua);
const readRenewScript = new LuaScript(readRenewLua);
const writeAcquireScript = new LuaScript(writeAcquireLua);
const writeReleaseScript = new LuaScript(writeReleaseLua);
const forceReleaseScript = new LuaScript(forceReleaseLua);

/** Published when the last read hold goes: wakes one waiter per Java client. */
export const READ_UNLOCK_MESSAGE = '0';
/** Published when the write lock is freed: Redisson's `READ_UNLOCK_MESSAGE`, which wakes every waiter. */
export const WRITE_UNLOCK_MESSAGE = '1';

/** The hash field of `owner`'s write holds. */
export const writerField = (owner: string): string => `${owner}:write`;

/** What the two halves of Redisson's RReadWriteLock share: the hash at the bare name, the channel, the messages. */
abstract class ReadWriteHalf extends HashLockProtocol {
  /** The `mode` value this half holds the hash in. */
  protected abstract readonly mode: 'read' | 'write';
  protected abstract readonly message: string;

  channel(resource: string, _waiter: string): string {
    return rwChannel(resource);
  }

  /** Deletes the lock whoever holds it, if it is in this half's mode; true when it was. */
  async forceUnlock(redis: RedisClient, resource: string): Promise<boolean> {
    const publish = await publishCommand(redis);
    const reply = await forceReleaseScript.run(
      redis,
      [resource, rwChannel(resource)],
      [this.mode, this.message, publish],
    );
    return reply === 1;
  }

  /**
   * Held when this half has a holder: the writer (mode "write"), or any reader, also under the
   * write mode of a writer holding read locks (Redisson's isLocked for each half).
   */
  async inspect(redis: RedisClient, resource: string): Promise<Inspection> {
    const [fields, ttl] = await Promise.all([redis.hgetall(resource), redis.pttl(resource)]);
    const holder = Object.entries(fields).find(([field]) => field !== 'mode' && this.owns(field));
    if (!holder) return { held: false, ttl: null, owner: null, fence: null, holds: 0 };
    return { held: true, ttl, owner: holder[0], fence: null, holds: Number(holder[1]) };
  }

  isReleaseMessage(message: string): boolean {
    return message === READ_UNLOCK_MESSAGE || message === WRITE_UNLOCK_MESSAGE;
  }

  /** Whether a hash field is a hold of this half. */
  protected abstract owns(field: string): boolean;
}

/** Redisson's RReadWriteLock.readLock(): shared among readers, and open to the thread holding the write lock. */
export class ReadLockProtocol extends ReadWriteHalf {
  readonly name = 'redisson-read';
  protected readonly mode = 'read';
  protected readonly message = READ_UNLOCK_MESSAGE;

  async acquire(redis: RedisClient, resource: string, owner: string, ttl: number): Promise<AcquireReply> {
    const reply = await readAcquireScript.run(
      redis,
      [resource, readTimeoutPrefix(resource, owner)],
      [ttl, owner, writerField(owner)],
    );
    return acquireReply(reply, ttl);
  }

  async unlock(redis: RedisClient, resource: string, owner: string): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    return unlockWithLatch(
      redis,
      readReleaseScript,
      resource,
      [resource, rwChannel(resource), readTimeoutPrefix(resource, owner), readKeyPrefix(resource)],
      [READ_UNLOCK_MESSAGE, owner, publish],
    );
  }

  override async extendMany(
    redis: RedisClient,
    items: readonly RenewalItem[],
    ttl: number,
  ): Promise<(string | null)[]> {
    return Promise.all(
      items.map(async (item) => {
        const keys = [item.resource, readTimeoutPrefix(item.resource, item.owner)];
        const holds = (await readRenewScript.run(redis, keys, [ttl, item.owner])) as number;
        return holds > 0 ? item.token : null;
      }),
    );
  }

  protected owns(field: string): boolean {
    return !field.endsWith(':write');
  }
}

/** Redisson's RReadWriteLock.writeLock(): exclusive; its hash field is `<uuid>:<thread>:write`. */
export class WriteLockProtocol extends ReadWriteHalf {
  readonly name = 'redisson-write';
  protected readonly mode = 'write';
  protected readonly message = WRITE_UNLOCK_MESSAGE;

  async acquire(redis: RedisClient, resource: string, owner: string, ttl: number): Promise<AcquireReply> {
    return acquireReply(await writeAcquireScript.run(redis, [resource], [ttl, writerField(owner)]), ttl);
  }

  override field(owner: string): string {
    return writerField(owner);
  }

  async unlock(redis: RedisClient, resource: string, owner: string, lease: number): Promise<ReleaseReply> {
    const publish = await publishCommand(redis);
    return unlockWithLatch(
      redis,
      writeReleaseScript,
      resource,
      [resource, rwChannel(resource)],
      [WRITE_UNLOCK_MESSAGE, lease, writerField(owner), publish],
    );
  }

  protected owns(field: string): boolean {
    return field.endsWith(':write');
  }
}
