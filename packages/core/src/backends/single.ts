import type { BackendExtension, BackendRefusal, LockBackend, ReleaseNotice } from '../backend.js';
import { clockDrift } from '../clock-drift.js';
import { type ClockSkewOptions, checkClockSkew } from '../clock-skew.js';
import { orDefault, refuseUnknown } from '../engine/options.js';
import { InvalidOptionError, ReplicationError } from '../errors.js';
import type { AttemptContext, LockProtocol, RedisClient, RenewalItem } from '../protocol.js';
import { isCluster } from '../topology.js';
import type { ReplicationOptions } from '../types.js';
import { connectionOf } from './connection-errors.js';
import { checkEvictionOption, type EvictionCheck, evictionGate } from './eviction.js';
import { warnWithoutFailoverDetector } from './failover-detector.js';
import { MasterWatch } from './master-watch.js';
import { ReleaseListener, sharedListener } from './release-listener.js';
import { renewalBatches } from './renewal-batches.js';
import { replicationGate, sendWait } from './replication.js';

/** Options of a backend on one Redis deployment (standalone, sentinel-backed or cluster). */
export interface SingleBackendOptions {
  /**
   * WAIT for replicas after each first acquisition; a lock no replica confirmed is released and
   * the acquire fails with `ReplicationError`. `'auto'` requires one replica within 250 ms when
   * the server reports connected replicas (checked at most every 10 s, and after a reconnect). Not supported on a
   * cluster (`'auto'` is off there). Default: `'auto'`.
   */
  readonly replication?: ReplicationOptions;
  /**
   * The release listener the backend's waiters listen on; its creator closes it. `false` for
   * none: the backend has no `listen`, so its waiters poll (`pubSub: 'poll'`). Default: the one
   * every backend on the client given none shares (one subscriber connection per client), closed
   * with the last of them.
   */
  readonly subscriber?: ReleaseListener | false;
  /**
   * Before the first acquisition, read the server's `maxmemory-policy`: with anything but
   * `noeviction` Redis may evict held locks or fence counters. `'warn'` (once per server,
   * `process.emitWarning`), `'refuse'` (every acquisition rejects with `UnsafeServerError`) or
   * `'ignore'`. Default: `'warn'`.
   */
  readonly eviction?: EvictionCheck;
  /**
   * The check of the master's clock, read with each fence counter's stamp: before the first
   * acquisition on it, and again after a reconnect or failover (see `ClockSkewOptions`). Only
   * formats with a fence counter (`token`, `legacy`) are checked. Default: `{ margin: 1000, action: 'warn' }`.
   */
  readonly clockSkew?: ClockSkewOptions;
}

/**
 * A protocol run on one Redis deployment through the caller's client. Close the backend once
 * done with it, even if `createEngine` refused it: until then it keeps a use of the client's
 * shared release listener (and its connections) and of its connection state.
 */
export function singleBackend(
  redis: RedisClient,
  protocol: LockProtocol,
  options: SingleBackendOptions = {},
): LockBackend {
  refuseUnknown(options, ['replication', 'subscriber', 'eviction', 'clockSkew'], 'the singleBackend options');
  const clockSkew = checkClockSkew(options.clockSkew);
  // The clock is read with the fence counter's stamp: a format without one would never be checked.
  if (clockSkew.action === 'refuse' && !protocol.fenceCounter) {
    throw new InvalidOptionError(
      'clockSkew.action',
      'refuse',
      `'warn': the ${protocol.name} format has no fence counter, whose stamp reads the master's clock`,
    );
  }
  checkSubscriber(options.subscriber);
  const replication = replicationGate(redis, orDefault(options.replication, 'auto'), () => connection.closes);
  const dropsUnanswered =
    (redis as { options?: { autoResendUnfulfilledCommands?: boolean } }).options
      ?.autoResendUnfulfilledCommands === false;
  // Any other client sends an unanswered check again once it has reconnected, and answers it.
  const checkEviction = evictionGate(
    redis,
    checkEvictionOption(options.eviction),
    dropsUnanswered ? () => connection.closes : undefined,
  );
  // Taken once every option passed: a refused locker must leave no listener on the client.
  const connection = connectionOf(redis);
  const cluster = isCluster(redis);
  warnWithoutFailoverDetector(redis);
  const inboxName = protocol.inbox?.bind(protocol);
  // A caller that may wait, on a key a waiter here listens to, registers the listener's inbox
  // when queued (see `ReleaseListener.inboxFor`): a call on a key nobody here waited for lately
  // sends none, and is queued for the lock's channel, which its waiter listens to as well.
  const withInbox = (context: AttemptContext | undefined, resource: string, owner: string) => {
    if (!inboxName || !context?.queueLease) return context;
    const inbox = listener?.inboxFor(protocol.channel(resource, owner), lease);
    return inbox ? { ...context, inbox } : context;
  };
  const extension = (token: string | null, ttl: number): BackendExtension | null =>
    token === null ? null : { token, validity: ttl - clockDrift(ttl) };
  const counterOf = protocol.fenceCounter?.bind(protocol);
  const watch = new MasterWatch(
    redis,
    counterOf && ((resource) => counterOf(resource, cluster)),
    (resource) => protocol.lockKey?.(resource) ?? resource,
    clockSkew,
  );
  // With 'refuse', a grant a release hands on directly would skip the clock check (`readyToGrant`):
  // the next waiter is only named, and acquires through an attempt, one round trip more.
  const directGrants = clockSkew.action !== 'refuse';
  // A release may draw a fence for the next owner: from a counter stamped on this master.
  const stamped = <T>(resource: string, send: () => Promise<T>): Promise<T> => {
    const stamping = watch.ready(resource);
    return stamping ? stamping.then(send) : send();
  };
  // A reply READONLY came from a demoted master: the locks it holds may be gone.
  const noticeDemotion = (error: unknown): never => {
    if (isReadonly(error)) watch.demoted();
    throw error;
  };

  // Last, past every check that may throw: a backend never made must not keep the client's listener open.
  const lease = options.subscriber === undefined ? sharedListener(redis) : undefined;
  const listener = options.subscriber === false ? undefined : (options.subscriber ?? lease?.listener);

  return {
    protocol,
    cluster,
    get acquireAllowance() {
      return replication.allowance();
    },
    get connectionCloses() {
      return cluster ? undefined : connection.closes;
    },
    dropsUnanswered,
    get connectionError() {
      return connection.error;
    },

    async acquire(resource, owner, ttl, given) {
      const context = withInbox(given, resource, owner);
      const unchecked = checkEviction(resource);
      if (unchecked) await unchecked;
      const stamping = watch.readyToGrant(resource);
      if (stamping) await stamping;
      const stampedAt = watch.stampedAt(resource);
      const planned = replication.plan();
      const plan = planned instanceof Promise ? await planned : planned;
      // The call's abandon went out while the server was being checked: sent now, the attempt
      // would run after it and queue the owner again, to be handed the lock when nobody waits.
      if (context?.wanted?.() === false) return CANCELLED;
      // WAIT goes out on the grant's answer, only for a grant: one behind every attempt would hold
      // the connection (renewals, releases) for its timeout whenever a replica lags, refused
      // attempts included. A reconnect before the answer puts the WAIT on a connection that never
      // wrote the grant, which it could not confirm: such a grant counts as unconfirmed.
      const closes = connection.closes;
      const reply = await protocol
        // A grant another client's release writes could not be confirmed by this WAIT.
        .acquire(
          redis,
          resource,
          owner,
          ttl,
          plan
            ? { wait: 0, ...context, grantLease: undefined }
            : directGrants || !context
              ? context
              : { ...context, grantLease: undefined },
        )
        .catch((error: unknown) => {
          // min-replicas-to-write refused the write: the same outcome as an unconfirmed WAIT.
          if (error instanceof Error && error.message.startsWith('NOREPLICAS')) {
            throw new ReplicationError(resource, 1, 0, { cause: error });
          }
          return noticeDemotion(error);
        });
      if (!reply.acquired) return reply;
      if (watch.movedSince(resource, stampedAt)) {
        if (counterOf) {
          // The engine's undo goes behind a stamp of the slot's new master: the change is seen, its clock read.
          const { fence, holds, token } = reply;
          return { acquired: true, fence, holds, token, validity: ttl, unusable: new Error(MOVED_GRANT) };
        }
        // A format without a counter drew no fence from the moved slot: its grant stands, once the
        // new master's run id is read, which ends the holds the old master granted before this one
        // exists (read later, it would end this one too).
        await watch.ready(resource)?.catch(() => {});
      }
      // Only a new grant drew its fence from the counter: a re-entry reports the hold's, which a
      // lock taken before the upgrade drew from its own per-key counter, not from this one.
      if (reply.holds === 1) watch.drew(resource, reply.fence);
      let unconfirmed = false;
      if (plan && reply.holds === 1) {
        // The lock is written already: whatever goes wrong while confirming it must undo it.
        const undo = () => protocol.release(redis, resource, owner, reply.token).catch(() => {});
        let confirmed: number;
        try {
          confirmed = connection.closes === closes ? await sendWait(redis, plan) : 0;
        } catch (error) {
          await undo();
          throw error;
        }
        if (confirmed < plan.replicas) {
          if (await replication.stillNeeded().catch(() => true)) {
            await undo();
            throw new ReplicationError(resource, plan.replicas, confirmed);
          }
          unconfirmed = true;
        }
      }
      // The drift of the lease in force: a re-entry reports the longer lease it left in place.
      const lease = reply.ttl ?? ttl;
      // Built field by field: spreading the reply into a literal with more fields takes V8's
      // slow path, about half of the client's own time per acquisition.
      return {
        acquired: true,
        fence: reply.fence,
        holds: reply.holds,
        token: reply.token,
        validity: lease - clockDrift(lease),
        // A re-entry is not confirmed by itself: the hold it counts into was, or was not, when
        // granted (a hold of this owner in another locker or process may never have been).
        confirmed: plan !== null && reply.holds === 1 && !unconfirmed,
      };
    },

    async abandon(resource, owner, context) {
      const stamping = watch.ready(resource);
      if (stamping) await stamping;
      await protocol.abandon?.(redis, resource, owner, context);
    },

    async release(resource, owner, token, handedOn, id, witness, attempt) {
      const closes = connection.closes;
      const reply = await stamped(resource, () =>
        protocol.release(redis, resource, owner, token, handedOn, id, attempt),
      );
      if (witness) witness.ranOnce = connection.closes === closes;
      return reply;
    },

    async undo(resource, owner, token, context) {
      const { attempt } = context;
      // An owner that is not fresh has other holds in use: a plain release resent by the client
      // after a reconnect would take off one of them. Named by the attempt, the undo takes off
      // only the hold that attempt added, once. A format without an undo of its own takes off one
      // hold, with the attempt as the release's id so that a copy takes off none; once that
      // grant's lease has ended, that may be a hold taken since (said in the README). A fresh
      // owner's grant is its call's only hold.
      await stamped(resource, () => {
        if (context.fresh || !attempt) return protocol.release(redis, resource, owner, token);
        return protocol.undo
          ? protocol.undo(redis, resource, owner, token, attempt, context)
          : protocol.release(redis, resource, owner, token, undefined, attempt);
      });
    },

    async extend(resource, owner, token, ttl) {
      return extension(await protocol.extend(redis, resource, owner, token, ttl).catch(noticeDemotion), ttl);
    },

    async extendMany(items, ttl) {
      const answers = new Map<RenewalItem, BackendExtension | null | Error>();
      // Each batch settles on its own: one that fails (its master unreachable, an error reply)
      // leaves its items in doubt, not the other batches' answered ones.
      await Promise.all(
        renewalBatches(items, protocol, cluster).map((batch) =>
          (protocol.extendMany
            ? protocol.extendMany(redis, batch, ttl)
            : Promise.all(
                batch.map((item) => protocol.extend(redis, item.resource, item.owner, item.token, ttl)),
              )
          )
            .catch(noticeDemotion)
            .then(
              (tokens) => {
                batch.forEach((item, i) => {
                  answers.set(item, extension(tokens[i] ?? null, ttl));
                });
              },
              (error: unknown) => {
                const failure =
                  error instanceof Error ? error : new Error('renewal failed', { cause: error });
                for (const item of batch) answers.set(item, failure);
              },
            ),
        ),
      );
      return items.map((item) => answers.get(item) ?? null);
    },

    inspect: (resource) => protocol.inspect(redis, resource),

    masterKnown: (resource) => watch.readyAfterRefusal(resource)?.catch(() => {}),

    ...(listener && {
      listen: (resource: string, waiter: string, onRelease: (notice: ReleaseNotice) => void) =>
        listener.listen(
          protocol.channel(resource, waiter),
          (message) => {
            if (!(protocol.isReleaseMessage?.(message) ?? true)) return;
            const notice = releaseNotice(protocol, message);
            // A grant handed on to a waiter of this process (`handedOn`) is published here too;
            // one to another process's waiter, to that process's inbox, is drawn there.
            if (notice.grant) watch.drew(resource, notice.grant.fence);
            onRelease(notice);
          },
          inboxName && ((id) => inboxName(resource, id)),
          lease,
        ),
    }),

    onMasterChange: (listener) => watch.onChange(listener),

    close: async () => {
      connection.release();
      watch.close();
      await lease?.release();
    },
  };
}

/** Why a grant ioredis moved to a slot's new master was undone (see `MasterWatch.movedSince`). */
const MOVED_GRANT =
  "granted by a cluster node this client had not checked yet (the slot's master changed): undone, and the node checked";

/** The refusal of an attempt an abandon cancelled before its script was sent. */
const CANCELLED: BackendRefusal = { acquired: false, remaining: -1 };

function isReadonly(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('READONLY');
}

/** Whom a release message of `protocol` wakes. */
export function releaseNotice(protocol: LockProtocol, message: string): ReleaseNotice {
  const grant = protocol.grantIn?.(message);
  return {
    all: protocol.wakesAll?.(message) ?? false,
    to: grant ? grant.owner : protocol.addressee?.(message),
    grant,
  };
}

/** Refuses a `subscriber` that is none of its values: `null` would otherwise read as `false`, and silently poll. */
function checkSubscriber(subscriber: unknown): void {
  if (subscriber === undefined || subscriber === false || subscriber instanceof ReleaseListener) return;
  throw new InvalidOptionError(
    'subscriber',
    subscriber,
    'a ReleaseListener, false for none, or left out for the one shared on the client',
  );
}
