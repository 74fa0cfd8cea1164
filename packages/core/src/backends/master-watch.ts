import { isPermissionError } from '../acl-refusal.js';
import {
  type ClockSkew,
  type ClockSkewCheck,
  foundOff,
  readClock,
  skewRefusal,
  socketAddress,
  unsureRefusal,
} from '../clock-skew.js';
import { detached } from '../engine/detached.js';
import stampLua from '../fence-epoch.lua';
import { keySlot } from '../hash-tag.js';
import type { RedisClient } from '../protocol.js';
import { LuaScript } from '../script.js';
import { isCluster } from '../topology.js';
import probeLua from './master-probe.lua';

const stampScript = new LuaScript(stampLua);
const probeScript = new LuaScript(probeLua);

/** Called when the master behind some locks changed; `affects` says which resources it concerns. */
export type MasterChangeListener = (affects: (resource: string) => boolean) => void;

/**
 * Connection events of one client, shared by every backend on it (a service may make many
 * lockers on one client; each adding listeners of its own would trip Node's leak warning), and
 * listened to until the last of them is closed: a closed or refused locker leaves the client's
 * listeners as they were.
 * The generation moves whenever the client may have reached another server: a reconnect on a
 * standalone or Sentinel client (Sentinel's `failoverDetector` disconnects on `+switch-master`),
 * a slot refresh or a node change on a cluster. `onMoved` is told after a reconnect, or after a
 * cluster's slots were read again (a failover or a resharding shows there first).
 */
class ClientEvents {
  generation = 0;
  readonly onMoved = new Set<() => void>();
  /** The watches on the client not yet closed. */
  users = 0;
  private reconnecting = false;
  private readonly listening: [event: string, listener: () => void][];

  constructor(private readonly redis: RedisClient) {
    const moved = () => {
      this.generation += 1;
    };
    this.listening = isCluster(redis)
      ? [
          ['+node', moved],
          ['-node', moved],
          // Every refresh is a new generation, though it costs each counter a stamp at its next
          // acquisition: a master restarted empty at the same address (ioredis reconnecting to
          // it with `clusterNodeRetryStrategy`) shows no node change, only refreshes. The
          // counters whose slot moved to another master are stamped at once.
          [
            'refresh',
            () => {
              moved();
              this.tell();
            },
          ],
        ]
      : [
          [
            'close',
            () => {
              moved();
              this.reconnecting = true;
            },
          ],
          [
            'ready',
            () => {
              if (!this.reconnecting) return;
              this.reconnecting = false;
              this.tell();
            },
          ],
        ];
    for (const [event, listener] of this.listening) redis.on(event, listener);
  }

  stop(): void {
    for (const [event, listener] of this.listening) this.redis.off(event, listener);
  }

  /** Outside the context of whichever call's command led to the event: the stamps outlive it. */
  private tell(): void {
    detached(() => {
      for (const listener of this.onMoved) listener();
    });
  }
}

const clients = new WeakMap<RedisClient, ClientEvents>();

function eventsOf(redis: RedisClient): ClientEvents {
  let events = clients.get(redis);
  if (!events) {
    events = new ClientEvents(redis);
    clients.set(redis, events);
  }
  events.users += 1;
  return events;
}

function release(redis: RedisClient, events: ClientEvents): void {
  events.users -= 1;
  if (events.users > 0) return;
  events.stop();
  clients.delete(redis);
}

interface Stamp {
  /** The key it is sent with: the counter, or for a format without one, a lock key of its slot. */
  readonly route: string;
  /** The client generation it was made in (-1 after a failure): another one stamps again before the next grant. */
  generation: number;
  /** On a cluster, the master the client routed the counter's slot to when it stamped. */
  readonly node: string | undefined;
  /**
   * On a cluster, the master that answered: where the client routes the slot once the answer is
   * in (a MOVED reply on the way sent the stamp on to the slot's new master).
   */
  servedBy: string | undefined;
  /** The run id of the master that answered, once it has. */
  runId: string | undefined;
  pending: Promise<void> | undefined;
  /** With `clockSkew.action` 'refuse', what the stamp found of a master's clock beyond the margin. */
  skew: ClockSkew | undefined;
  /** With 'refuse', the clock's reading took longer than the margin: it proves nothing. */
  unsure: boolean;
}

/**
 * What a user the ACL refuses the stamp (an ACL written for an earlier version) is warned of,
 * once per process: the counter's stamp, or the run id read of a format without a counter.
 */
const NO_PERMISSION = {
  stamp: {
    code: 'ERR_LOCK_FENCE_EPOCH',
    message: (counter: string) =>
      `the Redis user may not stamp fence counters with their master (allow "set" and "info" on ${counter}:epoch): fences may go backwards after a failover`,
  },
  probe: {
    code: 'ERR_LOCK_MASTER_WATCH',
    message: (key: string) =>
      `the Redis user may not read the master's run id (allow "info", and "evalsha" and "eval" on ${key}): a lock lost to a failover is seen only at its next renewal`,
  },
};
const warnedNoPermission = new Set<keyof typeof NO_PERMISSION>();

/**
 * Keeps fences increasing across a change of master, and tells the engine about the change.
 *
 * Before the first grant on a fence counter, and again before the first grant after the client
 * may have reached another server, the counter is stamped with the run id of the master it
 * lives on (`fence-epoch.lua`): a counter stamped by another master is raised to a new epoch,
 * above any fence the old master may have handed out in increments the new one never received.
 * A run id that differs from the one the counter was last stamped with here is a master change
 * seen by this client. So is a `READONLY` reply (the master was demoted under a live connection).
 * After a reconnect the counters already in use are stamped again at once, and on a cluster,
 * after a slot refresh, those whose slot the client now routes to another master: a change is
 * seen without waiting for the next acquisition in the slot (a renewal that meets the new master
 * would otherwise keep a hold its failover may have lost). Each stamp also reads the master's clock
 * (`clockSkew`): since a grant waits for its counter's stamp, a master whose clock is off is known
 * before the first grant on it, and with 'refuse' none is made (`readyToGrant`). A stamp that found
 * it off does not count: the next call stamps again, so a clock put right is seen at once. Nor
 * does one whose round trip took longer than the margin: a grant waits for another stamp.
 *
 * Per counter it remembers the highest value this client knows the counter reached: the fences
 * drawn from it (`drew`) and the value each stamp reports. A stamp that finds the counter below
 * it (writes lost: a master back after a failover without its successor's increments, a restart
 * without persistence) raises the counter to the next epoch above it, and that is a change too.
 *
 * A format without a fence counter (Redisson's) is watched all the same, with a stamp that only
 * reads the master's run id (`master-probe.lua`), per master (per slot on a cluster): its holds
 * learn of a failover as the others do. Its fences are not raised, nor its master's clock read.
 */
export class MasterWatch {
  private readonly events: ClientEvents;
  /** By counter, or for a format without one, by slot (on a cluster) or for the one master. */
  private readonly stamps = new Map<string, Stamp>();
  /** Per counter, the highest value this client knows it reached. */
  private readonly reached = new Map<string, number>();
  /** The stamp's name and key for the resource asked last: an acquisition asks up to four times for one resource. */
  private lastResource: string | undefined;
  private lastCounter = '';
  private lastRoute = '';
  private readonly listeners = new Set<MasterChangeListener>();
  private readonly restamp = () => {
    const cluster = isCluster(this.redis);
    for (const [counter, stamp] of this.stamps) {
      if (cluster && !this.routedElsewhere(stamp)) continue;
      this.stamp(counter, stamp.route).pending?.catch(() => {});
    }
  };

  constructor(
    private readonly redis: RedisClient,
    /** The fence counter a resource's grants draw from; undefined for a format without one. */
    private readonly counterOf: ((resource: string) => string) | undefined,
    /** The key whose slot a resource's lock lives in (for the cluster node a change concerns). */
    private readonly lockKeyOf: (resource: string) => string,
    private readonly clockSkew: ClockSkewCheck,
  ) {
    this.events = eventsOf(redis);
    this.events.onMoved.add(this.restamp);
  }

  /** Resolves once the resource's counter is stamped in this generation; undefined when it already is. */
  ready(resource: string): Promise<void> | undefined {
    return this.current(this.counterFor(resource)).pending;
  }

  /**
   * `ready`, for a renewal or extend Redis refused. On a cluster, a stamp answered by another
   * master than the one the client now routes its slot to is made again: ioredis follows a MOVED
   * reply at once, rewriting the slot's master before it sends the command on, while the slot
   * refresh that MOVED starts (which moves the generation) lands later, so a renewal refused by a
   * shard's new master would otherwise come before the stamp that reports the failover.
   */
  readyAfterRefusal(resource: string): Promise<void> | undefined {
    const counter = this.counterFor(resource);
    const stamp = this.stamps.get(counter);
    if (stamp && stamp.pending === undefined && isCluster(this.redis) && this.routedElsewhere(stamp)) {
      stamp.generation = -1;
    }
    return this.current(counter).pending;
  }

  /**
   * `ready`, before a grant: with `clockSkew.action` 'refuse', rejects with `ClockSkewError` when
   * the stamp it waits for finds the master's clock off. Releases wait for `ready` alone: a lock
   * already held on a master found off is still given back.
   */
  readyToGrant(resource: string, rereading = false): Promise<void> | undefined {
    const stamp = this.current(this.counterFor(resource));
    if (this.clockSkew.action !== 'refuse' || !stamp.pending) return stamp.pending;
    return stamp.pending.then(() => {
      if (stamp.skew) throw skewRefusal(resource, stamp.skew);
      if (!stamp.unsure) return;
      // Read once more; a server still that slow is unavailable for a checked grant, rather than
      // read again and again behind a call the engine has long given up on.
      if (!rereading) return this.readyToGrant(resource, true);
      throw unsureRefusal(resource, this.clockSkew.margin);
    });
  }

  /** On a cluster, the master that answered the stamp a grant of `resource` is about to rely on (see `movedSince`). */
  stampedAt(resource: string): string | undefined {
    if (!isCluster(this.redis)) return undefined;
    return this.stamps.get(this.counterFor(resource))?.servedBy;
  }

  /**
   * Whether the slot of `resource`'s counter is served by another master than `node` (what
   * `stampedAt` answered before the grant was sent), now that the grant's reply is in. ioredis
   * follows a MOVED reply to a slot's new master at once, before the slot refresh that makes the
   * next grant wait for a stamp there: a grant made that way (a failover or a resharding this
   * client had not seen) drew its fence from a counter nobody raised for the change, on a master
   * whose clock nobody read. The counter is then stamped again before the next grant. False
   * without a node (no cluster, no stamp answered: a user the ACL denies it, who is warned that
   * fences may go backwards).
   */
  movedSince(resource: string, node: string | undefined): boolean {
    if (node === undefined) return false;
    const counter = this.counterFor(resource);
    if (this.nodeOf(this.lastRoute) === node) return false;
    const stamp = this.stamps.get(counter);
    // Unless the slot refresh that followed the MOVED made a new stamp already.
    if (stamp?.servedBy === node) stamp.generation = -1;
    return true;
  }

  /** A fence drawn from the resource's counter (a grant, a handed-on grant): the counter reached it. */
  drew(resource: string, fence: number): void {
    if (this.counterOf === undefined) return;
    const counter = this.counterFor(resource);
    const known = this.reached.get(counter);
    if (known === undefined || fence > known) this.reached.set(counter, fence);
  }

  /** A reply said the server is no longer a master: every lock on it is concerned. */
  demoted(): void {
    if (isCluster(this.redis)) return;
    this.notify(() => true);
  }

  onChange(listener: MasterChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.listeners.clear();
    // Closed once: a second close must not take another watch's place among the client's users.
    if (!this.events.onMoved.delete(this.restamp)) return;
    release(this.redis, this.events);
  }

  /** The name of the resource's stamp (see `stamps`); its key is then `lastRoute`. */
  private counterFor(resource: string): string {
    if (resource !== this.lastResource) {
      if (this.counterOf) {
        this.lastCounter = this.counterOf(resource);
        this.lastRoute = this.lastCounter;
      } else {
        this.lastRoute = this.lockKeyOf(resource);
        this.lastCounter = isCluster(this.redis) ? `slot ${keySlot(this.lastRoute)}` : 'master';
      }
      this.lastResource = resource;
    }
    return this.lastCounter;
  }

  /** The counter's stamp in this generation, made now if there is none. Right after `counterFor`. */
  private current(counter: string): Stamp {
    const stamp = this.stamps.get(counter);
    return stamp?.generation === this.events.generation
      ? stamp
      : this.stamp(counter, stamp?.route ?? this.lastRoute);
  }

  private stamp(counter: string, route: string): Stamp {
    const previous = this.stamps.get(counter)?.runId;
    const stamp: Stamp = {
      route,
      generation: this.events.generation,
      node: this.nodeOf(route),
      servedBy: undefined,
      runId: previous,
      pending: undefined,
      skew: undefined,
      unsure: false,
    };
    this.stamps.set(counter, stamp);
    const sentAt = Date.now();
    const known = this.reached.get(counter) ?? 0;
    const sent = this.counterOf
      ? stampScript.run(this.redis, [counter, `${counter}:epoch`], [previous ?? '', known])
      : probeScript.run(this.redis, [route], []);
    stamp.pending = sent.then(
      (reply) => {
        const [runId, raised, time, value] = reply as [string, number?, [string, string]?, string?];
        stamp.runId = String(runId);
        stamp.servedBy = this.nodeOf(route);
        stamp.pending = undefined;
        const reached = Number(value);
        if (reached > (this.reached.get(counter) ?? 0)) this.reached.set(counter, reached);
        if (time) this.checkClock(stamp, time, sentAt, Date.now());
        // Raised under the master it last saw: the counter lost writes (or another master
        // stamped it in between), and the locks on this master may have gone with them.
        if (previous !== undefined && (stamp.runId !== previous || raised === 1)) {
          this.notify(this.concerning(route));
        }
      },
      (error: unknown) => {
        if (isPermissionError(error)) {
          stamp.pending = undefined;
          warnNoPermission(this.counterOf ? 'stamp' : 'probe', route);
          return;
        }
        stamp.generation = -1;
        stamp.pending = undefined;
        if (error instanceof Error && error.message.startsWith('READONLY')) this.demoted();
        throw error;
      },
    );
    return stamp;
  }

  /**
   * Compares a master's TIME with this process's clock. Redis keeps expiry as an absolute time,
   * so a promoted replica (or a master after a jump) whose clock is off ends every lock early or
   * late by that much, while holders count their leases on their own clock.
   */
  private checkClock(stamp: Stamp, time: [string, string], sentAt: number, receivedAt: number): void {
    const verdict = readClock(this.clockSkew, time, sentAt, receivedAt);
    if (verdict === undefined) return;
    if (verdict === 'unsure') {
      stamp.unsure = true;
      stamp.generation = -1;
      return;
    }
    const runId = stamp.runId!;
    // The node that answered, not the one the stamp was sent to: a fresh cluster client's first
    // stamp goes out before its slot map is loaded, and one sent to a demoted master is moved on.
    const address = stamp.servedBy ?? socketAddress(this.redis);
    const server = `${address === undefined ? '' : `${address} `}(run_id ${runId.slice(0, 8)})`;
    stamp.skew = foundOff(this.clockSkew, runId, server, verdict);
    if (stamp.skew) stamp.generation = -1;
  }

  /** On a cluster, whether the client now routes the stamp's slot to another master than the one it reached. */
  private routedElsewhere(stamp: Stamp): boolean {
    return (stamp.servedBy ?? stamp.node) !== this.nodeOf(stamp.route);
  }

  /** The master (`host:port`) a cluster client routes the key's slot to now; undefined elsewhere. */
  private nodeOf(key: string): string | undefined {
    return isCluster(this.redis) ? this.redis.slots[keySlot(key)]?.[0] : undefined;
  }

  /** On a cluster a change concerns the locks of the stamped key's slot (the node that serves it); else all. */
  private concerning(key: string): (resource: string) => boolean {
    if (!isCluster(this.redis)) return () => true;
    const slot = keySlot(key);
    return (resource) => keySlot(this.lockKeyOf(resource)) === slot;
  }

  private notify(affects: (resource: string) => boolean): void {
    for (const listener of this.listeners) listener(affects);
  }
}

function warnNoPermission(refused: keyof typeof NO_PERMISSION, key: string): void {
  if (warnedNoPermission.has(refused)) return;
  warnedNoPermission.add(refused);
  const { code, message } = NO_PERMISSION[refused];
  process.emitWarning(message(key), { code, type: 'LockWarning' });
}
