import { InvalidKeyError } from '../../errors.js';
import expiryGuardLua from '../../expiry-guard.lua';
import { fenceCounter, legacyFenceCounter } from '../../fence-counter.js';
import { refuseSiblingName, slotKey } from '../../hash-tag.js';
import nextFenceLua from '../../next-fence.lua';
import type {
  AttemptContext,
  HandedGrant,
  Inspection,
  LockProtocol,
  RedisClient,
  ReleaseReply,
  RenewalItem,
} from '../../protocol.js';
import { publishCommand } from '../../pub-sub-mode.js';
import recentIdsLua from '../../recent-ids.lua';
import { LuaScript, UNSENT, WholeScript } from '../../script.js';
import { isCluster } from '../../topology.js';
import { extendOne, releaseReply } from '../replies.js';
import abandonLua from './abandon.lua';
import acquireLua from './acquire.lua';
import extendLua from './extend.lua';
import handOnLua from './hand-on.lua';
import inspectLua from './inspect.lua';
import keepFenceLua from './keep-fence.lua';
import raiseFenceLua from './raise-fence.lua';
import releaseLua from './release.lua';

const acquireScript = new LuaScript(expiryGuardLua + nextFenceLua + recentIdsLua + acquireLua);
// Run on an abort or a deadline, with the caller waiting on it: see WholeScript.
const abandonScript = new WholeScript(expiryGuardLua + nextFenceLua + handOnLua + abandonLua);
const releaseScript = new LuaScript(expiryGuardLua + nextFenceLua + handOnLua + recentIdsLua + releaseLua);

/** A release message naming the next queued owner: `released:<owner>`. */
const ADDRESSED = 'released:';
/** A release message reporting a lock written for the next queued owner: `granted:<fence>:<lease>:<server ms>:<owner>`. */
const GRANTED = 'granted:';
const extendScript = new LuaScript(extendLua);
const inspectScript = new LuaScript(inspectLua);
// Rare (RedLock's seed and write-back, after the masters' counters diverged), often the first run
// on a server: see WholeScript.
const keepFenceScript = new WholeScript(keepFenceLua);
const raiseFenceScript = new WholeScript(raiseFenceLua);

/** Keys of one token lock, all in one slot; what each script takes is built once per resource. */
interface TokenKeys {
  readonly resource: string;
  readonly lock: string;
  readonly oldCounter: string;
  readonly channel: string;
  readonly queue: string;
  readonly registrations: string;
  /** The keys of the acquire, release and abandon scripts, per topology (the fence counter differs on a cluster). */
  scriptKeys: readonly string[] | undefined;
  clusterScriptKeys: readonly string[] | undefined;
}

/**
 * The keys of the resource used last: an acquisition asks for them up to four times (validate,
 * the fence counter, acquire, release), so one entry spares rebuilding them without holding
 * memory per key.
 */
let lastKeys: TokenKeys | undefined;

/** Keys of one token lock: the lock hash, the earlier per-key counter and its release channel, all in one slot. */
function keysOf(resource: string): TokenKeys {
  if (lastKeys?.resource === resource) return lastKeys;
  const lock = slotKey(resource);
  if (lock === null)
    throw new InvalidKeyError(resource, 'a key starting with "}" cannot carry a cluster hash tag');
  refuseSiblingName(resource, lock);
  const queue = `${lock}:queue`;
  const registrations = `${lock}:waiters`;
  lastKeys = {
    resource,
    lock,
    oldCounter: legacyFenceCounter(lock),
    channel: `${lock}:released`,
    queue,
    registrations,
    scriptKeys: undefined,
    clusterScriptKeys: undefined,
  };
  return lastKeys;
}

function scriptKeysOf(keys: TokenKeys, cluster: boolean): readonly string[] {
  const made = cluster ? keys.clusterScriptKeys : keys.scriptKeys;
  if (made) return made;
  const list = [
    keys.lock,
    fenceCounter(keys.resource, keys.lock, cluster),
    keys.oldCounter,
    keys.queue,
    keys.registrations,
  ];
  if (cluster) keys.clusterScriptKeys = list;
  else keys.scriptKeys = list;
  return list;
}

/**
 * The native format: a hash `{<key>}` holding `owner → hold count` and `'' → fence` with a ms
 * TTL (and, while re-entered, `SOH → the ids of the last releases that took off a hold`), a fence counter shared by the locks of a namespace (see `fenceCounter`) bumped by every
 * first acquisition, and a release message on `{<key>}:released`. The owner is the token, so
 * release and extend are compare-and-act. Callers that wait are queued in `{<key>}:queue` (by
 * arrival) with a registration lease in `{<key>}:waiters`; a release hands the lock to the first
 * live one (a grant its message carries) or names it, so exactly one waiter is woken, in
 * whichever process it waits. On plain pub/sub that message goes to the inbox the waiter
 * registered (`{<key>}:inbox:<id>`, see `inbox`), so no other process wakes for it.
 */
export function tokenProtocol(): LockProtocol {
  return {
    name: 'token',

    validate(resource) {
      keysOf(resource);
    },

    lockKey(resource) {
      return keysOf(resource).lock;
    },

    channel(resource) {
      return keysOf(resource).channel;
    },

    inbox(resource, id) {
      // Never a lock's channel, which always ends with ':released'.
      return `${keysOf(resource).lock}:inbox:${id}`;
    },

    fenceCounter(resource, cluster) {
      return scriptKeysOf(keysOf(resource), cluster)[1]!;
    },

    async acquire(redis, resource, owner, ttl, context) {
      const args = acquireArgs(owner, ttl, context);
      const sent = await acquireScript.run(
        redis,
        scriptKeysOf(keysOf(resource), isCluster(redis)),
        args,
        context?.wanted,
      );
      // Given up on before it could be sent again: it ran nowhere.
      if (sent === UNSENT) return { acquired: false, remaining: -1 };
      const reply = sent as number[];
      if (reply[0] === 1) {
        return {
          acquired: true,
          fence: reply[1]!,
          holds: reply[2]!,
          token: owner,
          ttl: reply[3]!,
          counter: reply[4],
        };
      }
      return { acquired: false, remaining: reply[1]!, serverTime: reply[2] };
    },

    release(redis, resource, owner, _token, handedOn, id = '') {
      return runRelease(redis, resource, owner, id, '', handedOn);
    },

    undo(redis, resource, owner, _token, attempt) {
      // Named by the attempt: a copy resent after a reconnect takes off no second hold.
      return runRelease(redis, resource, owner, attempt, attempt);
    },

    async abandon(redis, resource, owner, context) {
      const keys = keysOf(resource);
      await abandonScript.run(redis, scriptKeysOf(keys, isCluster(redis)), [
        owner,
        context?.fresh ? '1' : '0',
        await publishCommand(redis),
        keys.channel,
      ]);
    },

    addressee(message) {
      if (message.startsWith(ADDRESSED)) return message.slice(ADDRESSED.length);
      return grantIn(message)?.owner;
    },

    grantIn,

    extend: extendOne(extendAll),

    extendMany: extendAll,

    async raiseFence(redis, resource, fence, owner = '') {
      const { lock } = keysOf(resource);
      await raiseFenceScript.run(
        redis,
        [fenceCounter(resource, lock, isCluster(redis)), lock],
        [fence, owner],
      );
    },

    async keepFence(redis, resource, owner, fence) {
      await keepFenceScript.run(redis, [keysOf(resource).lock], [owner, fence]);
    },

    async inspect(redis, resource): Promise<Inspection> {
      const keys = keysOf(resource);
      const [owner, holds, pttl, fence] = (await inspectScript.run(
        redis,
        [keys.lock, keys.oldCounter],
        [],
      )) as [string | null, number, number, string | null];
      return {
        held: owner !== null,
        ttl: owner === null ? null : pttl,
        owner,
        fence: fence === null ? null : Number(fence),
        holds,
      };
    },
  };
}

/** acquire.lua's arguments (see there): a call that will not wait sends three, a fresh one no attempt id. */
function acquireArgs(owner: string, ttl: number, context: AttemptContext | undefined): (string | number)[] {
  return withoutEmptyTail(3, [
    owner,
    ttl,
    (context?.fresh ? 1 : 0) + (context?.queued ? 2 : 0),
    context?.queueLease ?? 0,
    // Read only with a queue lease: a call that will not wait leaves it out.
    (context?.fresh && context.queueLease && context.grantLease) || 0,
    // A fresh owner's attempts are told apart without their ids.
    context?.fresh ? '' : (context?.attempt ?? ''),
    // Only a caller that may wait, on a key contended lately, names an inbox.
    context?.inbox ?? '',
  ]);
}

/**
 * `args` without the trailing '' and 0 past the first `kept`: the scripts read an absent
 * argument as that default, and each argument sent costs every call on both ends.
 */
function withoutEmptyTail(kept: number, args: (string | number)[]): (string | number)[] {
  let length = args.length;
  while (length > kept && (args[length - 1] === '' || args[length - 1] === 0)) length -= 1;
  args.length = length;
  return args;
}

/** Runs release.lua: `attempt` set for the undo of that acquire attempt only (see `undo`). */
async function runRelease(
  redis: RedisClient,
  resource: string,
  owner: string,
  id: string,
  attempt: string,
  handedOn?: (grant: HandedGrant) => void,
): Promise<ReleaseReply> {
  // Known once the client's mode is: awaiting the plain string would cost every release a hop.
  const known = publishCommand(redis);
  const publish = typeof known === 'string' ? known : await known;
  const left = (await releaseScript.run(
    redis,
    scriptKeysOf(keysOf(resource), isCluster(redis)),
    withoutEmptyTail(3, [owner, keysOf(resource).channel, id, attempt, publish === 'PUBLISH' ? '' : publish]),
  )) as number | string;
  if (typeof left === 'number') return releaseReply(left);
  const grant = grantIn(left);
  if (grant) handedOn?.(grant);
  return 'released';
}

function grantIn(message: string): HandedGrant | undefined {
  if (!message.startsWith(GRANTED)) return undefined;
  const leaseAt = message.indexOf(':', GRANTED.length) + 1;
  const atAt = message.indexOf(':', leaseAt) + 1;
  const ownerAt = message.indexOf(':', atAt) + 1;
  // The owner is the rest, colons and all.
  const owner = message.slice(ownerAt);
  return {
    owner,
    token: owner,
    fence: Number(message.slice(GRANTED.length, leaseAt - 1)),
    lease: Number(message.slice(leaseAt, atAt - 1)),
    at: Number(message.slice(atAt, ownerAt - 1)),
  };
}

/** Renews every item in one script; the caller groups items so that they share one slot on a cluster. */
async function extendAll(
  redis: RedisClient,
  items: readonly RenewalItem[],
  ttl: number,
): Promise<(string | null)[]> {
  const keys = items.map((item) => keysOf(item.resource).lock);
  const owners = items.map((item) => item.owner);
  const renewed = (await extendScript.run(redis, keys, [ttl, ...owners])) as number[];
  return items.map((item, i) => (renewed[i] === 1 ? item.owner : null));
}
