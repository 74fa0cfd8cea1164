import {
  type AcquireReply,
  type AttemptContext,
  type Inspection,
  LuaScript,
  type RedisClient,
  type RenewalItem,
} from '@lock/core';
import { AcquireScript } from '../attempt.js';
import attemptLua from '../attempt.lua';
import { HashLockProtocol, type UnlockCall } from '../hash-protocol.js';
import {
  attemptLatches,
  attemptLatchPrefix,
  fenceCounter,
  readFenceKey,
  readKeyPrefix,
  readTimeoutPrefix,
  rwChannel,
} from '../names.js';
import { publishCommand } from '../publish.js';
import { undoScriptOf } from '../unlock.js';
import forceReleaseLua from './force-release.lua';
import readAcquireLua from './read-acquire.lua';
import readReleaseLua from './read-release.lua';
import readRenewLua from './read-renew.lua';
import readUndoLua from './read-undo.lua';
import writeAcquireLua from './write-acquire.lua';
import writeReleaseLua from './write-release.lua';
import writeUndoLua from './write-undo.lua';

const readAcquireScript = new AcquireScript(readAcquireLua);
const readReleaseScript = new LuaScript(attemptLua + readReleaseLua);
const readRenewScript = new LuaScript(attemptLua + readRenewLua);
const writeAcquireScript = new AcquireScript(writeAcquireLua);
const writeReleaseScript = new LuaScript(attemptLua + writeReleaseLua);
const forceReleaseScript = new LuaScript(attemptLua + forceReleaseLua);
const readUndoScript = undoScriptOf(attemptLua, readReleaseLua, readUndoLua);
const writeUndoScript = undoScriptOf(attemptLua, writeReleaseLua, writeUndoLua);

/** Published when the last read hold goes: wakes one waiter per client, Java's and ours. */
export const READ_UNLOCK_MESSAGE = '0';
/** Published when the write lock is freed: Redisson's `READ_UNLOCK_MESSAGE`, which wakes every waiter of a client. */
export const WRITE_UNLOCK_MESSAGE = '1';

/** The hash field of `owner`'s write holds. */
export const writerField = (owner: string): string => `${owner}:write`;

/**
 * What the two halves of Redisson's RReadWriteLock share: the hash at the bare name, the channel,
 * the messages, and the fence counter of the RLock of the same name.
 */
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
      [resource, rwChannel(resource), attemptLatchPrefix(resource)],
      [this.mode, this.message, publish],
    );
    return reply === 1;
  }

  /**
   * Held when this half has a holder: the writer (mode "write"), or any reader, also under the
   * write mode of a writer holding read locks (Redisson's isLocked for each half). The fence is
   * the last one drawn on the name.
   */
  async inspect(redis: RedisClient, resource: string): Promise<Inspection> {
    const [fields, ttl, counter] = await Promise.all([
      redis.hgetall(resource),
      redis.pttl(resource),
      redis.get(fenceCounter(resource)),
    ]);
    const fence = counter === null ? null : Number(counter);
    const holder = Object.entries(fields).find(([field]) => field !== 'mode' && this.owns(field));
    if (!holder) return { held: false, ttl: null, owner: null, fence, holds: 0 };
    return { held: true, ttl, owner: holder[0], fence, holds: Number(holder[1]) };
  }

  isReleaseMessage(message: string): boolean {
    return message === READ_UNLOCK_MESSAGE || message === WRITE_UNLOCK_MESSAGE;
  }

  /** A write unlock lets every waiting reader in at once, as Redisson's `1` wakes all of a client's waiters. */
  wakesAll(message: string): boolean {
    return message === WRITE_UNLOCK_MESSAGE;
  }

  /** Whether a hash field is a hold of this half. */
  protected abstract owns(field: string): boolean;
}

/** Redisson's RReadWriteLock.readLock(): shared among readers, and open to the thread holding the write lock. */
export class ReadLockProtocol extends ReadWriteHalf {
  readonly name = 'redisson-read';
  protected readonly mode = 'read';
  protected readonly message = READ_UNLOCK_MESSAGE;

  acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
    context?: AttemptContext,
  ): Promise<AcquireReply> {
    const keys = [
      resource,
      readTimeoutPrefix(resource, owner),
      fenceCounter(resource),
      readFenceKey(resource, owner),
      attemptLatches(resource, writerField(owner)),
    ];
    return readAcquireScript.run(
      redis,
      resource,
      owner,
      keys,
      [ttl, owner, writerField(owner)],
      ttl,
      context,
    );
  }

  protected readonly unlockScripts = { release: readReleaseScript, undo: readUndoScript };

  /** read-release.lua's keys and arguments; a read unlock re-applies no lease. */
  protected unlockCall(resource: string, owner: string, _lease: number, publish: string): UnlockCall {
    return { keys: readReleaseKeys(resource, owner), args: [READ_UNLOCK_MESSAGE, owner, publish] };
  }

  override async extendMany(
    redis: RedisClient,
    items: readonly RenewalItem[],
    ttl: number,
  ): Promise<(string | null)[]> {
    return Promise.all(
      items.map(async (item) => {
        const keys = [
          item.resource,
          readTimeoutPrefix(item.resource, item.owner),
          readFenceKey(item.resource, item.owner),
          attemptLatches(item.resource, item.owner),
        ];
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

  acquire(
    redis: RedisClient,
    resource: string,
    owner: string,
    ttl: number,
    context?: AttemptContext,
  ): Promise<AcquireReply> {
    const keys = [resource, fenceCounter(resource)];
    const field = writerField(owner);
    return writeAcquireScript.run(redis, resource, field, keys, [ttl, field], ttl, context);
  }

  override field(owner: string): string {
    return writerField(owner);
  }

  protected readonly unlockScripts = { release: writeReleaseScript, undo: writeUndoScript };

  /** write-release.lua's keys and arguments: the writer's field is the owner's with `:write`. */
  protected unlockCall(resource: string, owner: string, lease: number, publish: string): UnlockCall {
    return {
      keys: [resource, rwChannel(resource), attemptLatches(resource, writerField(owner))],
      args: [WRITE_UNLOCK_MESSAGE, lease, writerField(owner), publish],
    };
  }

  protected owns(field: string): boolean {
    return field.endsWith(':write');
  }
}

/** The keys of read-release.lua (and of the read undo) for `owner`, but the unlock latch. */
function readReleaseKeys(resource: string, owner: string): string[] {
  return [
    resource,
    rwChannel(resource),
    readTimeoutPrefix(resource, owner),
    readKeyPrefix(resource),
    readFenceKey(resource, owner),
    attemptLatches(resource, owner),
  ];
}
