import { orDefault, refuseUnknown } from '../../engine/options.js';
import { InvalidKeyError, InvalidOptionError } from '../../errors.js';
import expiryGuardLua from '../../expiry-guard.lua';
import { fenceCounter } from '../../fence-counter.js';
import nextFenceLua from '../../next-fence.lua';
import type { Inspection, LockProtocol, RedisClient, ReleaseReply, RenewalItem } from '../../protocol.js';
import { publishCommand } from '../../pub-sub-mode.js';
import recentIdsLua from '../../recent-ids.lua';
import { LuaScript } from '../../script.js';
import { isCluster } from '../../topology.js';
import { extendOne, releaseReply } from '../replies.js';
import acquireLua from './acquire.lua';
import extendLua from './extend.lua';
import inspectLua from './inspect.lua';
import { checkNameFor, legacyKeys } from './keys.js';
import { type LegacyUnit, leaseUnits, MAX_TTL, msPerUnit, paddingUnits } from './lease.js';
import ownerRecordLua from './owner-record.lua';
import releaseLua from './release.lua';
import timestampLua from './timestamp.lua';

const acquireScript = new LuaScript(
  expiryGuardLua + nextFenceLua + recentIdsLua + ownerRecordLua + timestampLua + acquireLua,
);
const releaseScript = new LuaScript(recentIdsLua + ownerRecordLua + releaseLua);
const extendScript = new LuaScript(ownerRecordLua + extendLua);
const inspectScript = new LuaScript(ownerRecordLua + timestampLua + inspectLua);

/** Options of the legacy SETNX + GETSET timestamp protocol. */
export interface LegacyProtocolOptions {
  /**
   * Unit of the timestamp stored in the key: `'ms'` for JedisLock-style fleets (value = now +
   * ttl, TTL = ttl), `'s'` for the PHP fleet of seed 001 (value = now + ttl/1000 + 1, TTL one
   * second longer than the ttl, which must then be whole seconds); the value is padded by
   * `peerClockAhead`. Default: `'ms'`.
   */
  readonly unit?: LegacyUnit;
  /**
   * How far past its timestamp, in ms, a key WITHOUT a Redis TTL (left by a fleet that never
   * sets one, or by a crash between SETNX and EXPIRE) must be before we take it over. Covers
   * the clock skew of the hosts that wrote it. Keys with a TTL are never taken over. Default: `2_000`.
   */
  readonly skewMargin?: number;
  /**
   * How far ahead of the Redis server's clock, in ms, the clocks of the legacy fleet sharing the
   * keys may run. Such a host reads our timestamp against its own clock, so it takes our lock
   * over that much before the timestamp by server time (B5). Every value we write (acquire,
   * re-entry, extend, renewal) therefore claims this much more than its TTL, rounded up to the
   * unit: the TTL, and so our validity, stays the ttl, while a host up to this far ahead reads the
   * timestamp as past only after that validity has ended. Hosts further ahead can still take
   * over early. `0` writes the timestamp the legacy clients write themselves (`now + ttl` in ms,
   * 1 ms short of JedisLock's `now + ttl + 1`; in seconds the PHP class's `now + ttl/1000 + 1`). From 0 to 2^31 - 1. Default: `2_000`, the skew `skewMargin`
   * allows for too.
   */
  readonly peerClockAhead?: number;
}

/** Codes the scripts answer instead of a reply when the key is not a legacy lock. */
const WRONG_TYPE = -1;
const NOT_A_TIMESTAMP = -2;
const FOREIGN_RECORD = -3;
const OTHER_UNIT = -4;

/**
 * The legacy timestamp lock, for services sharing keys with fleets that still run the old
 * Redis-docs algorithm. It writes what those fleets read (a plain string holding a decimal
 * Unix timestamp) and fixes what can be fixed on our side: server time, a TTL on every write
 * that matches the value, no takeover of a key that has a TTL, a takeover of a TTL-less stale
 * key only past `skewMargin`, release and extension only of a key whose owner record names us and
 * still describes it, and values that claim `peerClockAhead` past their TTL, for peers whose
 * clocks run ahead.
 */
export function legacyProtocol(options: LegacyProtocolOptions = {}): LockProtocol {
  // A misspelt `unit` would silently write ms where the PHP fleet reads seconds.
  refuseUnknown(options, ['unit', 'skewMargin', 'peerClockAhead'], 'the legacy protocol options');
  const unit = orDefault(options.unit, 'ms');
  if (unit !== 'ms' && unit !== 's') throw new InvalidOptionError('unit', unit, '"ms" or "s"');
  const skewMargin = orDefault(options.skewMargin, 2_000);
  if (!Number.isSafeInteger(skewMargin) || skewMargin < 0) {
    throw new InvalidOptionError('skewMargin', skewMargin, 'a whole number of ms, 0 or more');
  }
  const peerClockAhead = orDefault(options.peerClockAhead, 2_000);
  if (!Number.isSafeInteger(peerClockAhead) || peerClockAhead < 0 || peerClockAhead > MAX_TTL) {
    throw new InvalidOptionError(
      'peerClockAhead',
      peerClockAhead,
      `a whole number of ms from 0 to ${MAX_TTL}`,
    );
  }
  const scale = msPerUnit(unit);
  const padding = paddingUnits(unit, peerClockAhead);

  async function extendAll(redis: RedisClient, items: readonly RenewalItem[], ttl: number) {
    const lease = leaseUnits(unit, ttl);
    const keys = items.flatMap((item) => {
      const { lock, owner } = legacyKeys(item.resource);
      return [lock, owner];
    });
    // The owner record, not the token, tells whose a lock is (see extend.lua).
    const args = [scale, lease, padding, ...items.map((item) => item.owner)];
    const renewed = (await extendScript.run(redis, keys, args)) as (string | number)[];
    return items.map((_, i) => {
      const value = renewed[i];
      return typeof value === 'string' ? value : null;
    });
  }

  return {
    name: 'legacy',

    validate(resource, cluster) {
      legacyKeys(resource);
      checkNameFor(resource, cluster);
    },

    checkTtl(ttl) {
      leaseUnits(unit, ttl);
    },

    lockKey(resource) {
      return legacyKeys(resource).lock;
    },

    channel(resource) {
      return legacyKeys(resource).channel;
    },

    fenceCounter(resource, cluster) {
      return fenceCounter(resource, legacyKeys(resource).lock, cluster);
    },

    async acquire(redis, resource, owner, ttl, context) {
      const lease = leaseUnits(unit, ttl);
      const keys = legacyKeys(resource);
      checkNameFor(resource, isCluster(redis));
      const reply = await acquireScript.run(
        redis,
        [keys.lock, fenceCounter(resource, keys.lock, isCluster(redis)), keys.owner, keys.oldCounter],
        [scale, lease, padding, skewMargin, owner, context?.fresh ? '1' : '0', context?.attempt ?? ''],
      );
      const [state, fenceOrRemaining, value, holds, pttl] = checked(reply, resource, unit) as [
        number,
        number,
        string,
        number,
        number,
      ];
      // In seconds the stored lease runs a second past the ttl (see leaseUnits); the validity
      // the engine may count on stays the ttl's share of it. The value runs `padding` further
      // still, so the validity ends peerClockAhead before a peer ahead by that reads it as past.
      if (state === 1)
        return {
          acquired: true,
          fence: fenceOrRemaining,
          holds,
          token: value,
          ttl: pttl - (lease * scale - ttl),
        };
      return { acquired: false, remaining: fenceOrRemaining };
    },

    release(redis, resource, owner, _token, _handedOn, id = '') {
      return runRelease(redis, resource, owner, id, '');
    },

    undo(redis, resource, owner, _token, attempt) {
      // Named by the attempt: a copy resent after a reconnect takes off no second hold.
      return runRelease(redis, resource, owner, attempt, attempt);
    },

    extend: extendOne(extendAll),

    extendMany: extendAll,

    async inspect(redis, resource): Promise<Inspection> {
      const keys = legacyKeys(resource);
      const reply = await inspectScript.run(
        redis,
        [keys.lock, keys.oldCounter, keys.owner],
        [scale, skewMargin],
      );
      const [holds, pttl, fence, owner] = checked(reply, resource, unit) as [number, number, number, string];
      const held = holds > 0;
      return {
        held,
        ttl: held ? pttl : null,
        owner: owner === '' ? null : owner,
        fence: fence < 0 ? null : fence,
        holds,
      };
    },

    isReleaseMessage(message) {
      return message === 'released';
    },
  };
}

/** Runs release.lua: `attempt` set for the undo of that acquire attempt only (see `undo`). */
async function runRelease(
  redis: RedisClient,
  resource: string,
  owner: string,
  id: string,
  attempt: string,
): Promise<ReleaseReply> {
  const keys = legacyKeys(resource);
  const left = (await releaseScript.run(
    redis,
    [keys.lock, keys.owner],
    [owner, await publishCommand(redis), keys.channel, id, attempt],
  )) as number;
  return releaseReply(left);
}

/** Turns the scripts' "not a legacy lock" codes into a clear error; passes replies through. */
function checked(reply: unknown, resource: string, unit: 'ms' | 's'): unknown[] {
  if (reply === WRONG_TYPE) {
    throw new InvalidKeyError(
      resource,
      'the key holds another Redis type (a lock of another format?), not a legacy timestamp string',
    );
  }
  if (reply === NOT_A_TIMESTAMP) {
    throw new InvalidKeyError(
      resource,
      'the key holds a string that is not a decimal timestamp, so it is not a legacy lock',
    );
  }
  if (reply === OTHER_UNIT) {
    const [theirs, ours] = unit === 'ms' ? ['seconds', 'milliseconds'] : ['milliseconds', 'seconds'];
    throw new InvalidKeyError(
      resource,
      `the key holds a timestamp in ${theirs}, not in ${ours}: it is locked by a fleet of that unit; give legacyProtocol({ unit }) the unit of the fleet that shares the key`,
    );
  }
  if (reply === FOREIGN_RECORD) {
    throw new InvalidKeyError(
      resource,
      // The reason names no key (adapters show it to clients): the record's is `{<name>}:owner`.
      'the key of its owner record (the name in braces, then ":owner") holds another lock or data (another Redis type, or a hash with fields the legacy protocol never writes); that key is the protocol\'s own, so nothing was written',
    );
  }
  return reply as unknown[];
}
