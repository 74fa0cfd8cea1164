import type { LockBackend, ReleaseNotice } from '../backend.js';
import type { HandedGrant, LockProtocol } from '../protocol.js';
import { detached } from './detached.js';

/** One acquire call waiting for a key. */
export interface Waiter {
  /** The owner the call acquires as: a release may name it as the one to try next. */
  readonly owner: string;
  /** A release arrived that this waiter has not yet tried to act on. */
  notified: boolean;
  /** The lock a release wrote for this waiter (a direct grant), not yet taken. */
  granted: Handed | undefined;
  /** Set while the waiter sleeps: ends the sleep early. */
  wake: (() => void) | undefined;
}

/** A direct grant, and when it reached this process (clock ms): it was written no later. */
export interface Handed {
  readonly grant: HandedGrant;
  readonly at: number;
}

/** How a queue subscribes to its key's release messages: the backend's `listen`. */
type Listen = NonNullable<LockBackend['listen']>;

/** A notice for the first waiter, whoever it is. */
const FIRST: ReleaseNotice = { all: false, to: undefined };

/** How long a key's queue stays subscribed after its last waiter left: contention comes in bursts. */
const LINGER_MS = 5_000;

/**
 * How many unclaimed notices a queue keeps. A waiter joins within one round trip of the notices
 * it may have missed; under contention several releases a millisecond would still fit.
 */
const REMEMBERED = 32;

/** A release notice that reached the process when no waiter here was the one it woke. */
interface Unclaimed {
  /** When it came (clock ms). */
  readonly at: number;
  /** The owner it names; undefined when any waiter may act on it. */
  readonly to: string | undefined;
  readonly grant: HandedGrant | undefined;
}

interface Queue {
  readonly waiters: Set<Waiter>;
  /** Resolves once the release subscription is active (or failed: then waiters only poll). */
  ready: Promise<void>;
  /** Whether the subscription is active: a message sent from then on reaches `notify`. */
  active: boolean;
  /**
   * The subscription failed: its waiters poll, and the next join (a waiter's next refusal, or a
   * new waiter) subscribes anew, taking this queue's waiters along.
   */
  failed: boolean;
  unlisten: (() => void) | undefined;
  /**
   * Recent notices no waiter here took, oldest first (at most REMEMBERED): one may be for a
   * waiter whose refused attempt was answered after the notice came, still on its way to join.
   */
  unclaimed: Unclaimed[];
  /** When the newest notice dropped from `unclaimed` came (clock ms): a waiter that sent its attempt before then cannot tell what it missed. */
  forgottenAt: number;
  /** When its last waiter left (performance.now() ms): its subscription ends the linger later. */
  emptiedAt: number;
}

/**
 * The waiters of this locker, per key, in arrival order. A release message wakes only the
 * first waiter: waking every waiter of the process would send attempts that all but one lose.
 * A waiter that leaves with an unused notification hands it to the next one, so no release
 * is dropped. Polling with backoff remains the bound when a message is lost.
 */
export class WaitQueues {
  private readonly queues = new Map<string, Queue>();
  /**
   * Ends the subscriptions of queues empty for the linger. One timer for every queue: a timer
   * per emptied queue would be made and cleared on nearly every hand-off.
   */
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly protocol: LockProtocol,
    private readonly listen: Listen,
    private readonly clock: () => number,
    /** How long a key's queue stays subscribed after its last waiter left, in ms. Default: 5 s. */
    private readonly linger = LINGER_MS,
  ) {}

  /**
   * Adds a waiter for `resource` whose refused attempt was sent at `sentAt`, at once: the caller
   * must `leave(channel, waiter)` whatever becomes of it. `subscribed` resolves once release
   * messages can reach it (or the subscription failed: then it polls), with whether a release
   * may have slipped through unseen since that attempt: the subscription is new, or a notice came
   * in meanwhile that named this waiter before it was here to hear it, or named nobody. The caller
   * should then try again at once; a grant such a notice carried is put on the waiter, to be
   * taken without a round trip. A notice that named another owner is that owner's: the server's
   * queue already holds this waiter's place, so trying again would only be refused. Queues are
   * kept per release channel: formats that address one waiter (fair locks) get a queue per waiter.
   * A waiter already queued joins again once its queue's subscription failed (see `failed`);
   * `subscribed` then answers whether the new subscription is active: one that failed again must
   * not make the caller try at once, over and over.
   */
  join(
    resource: string,
    owner: string,
    waiter: Waiter,
    sentAt: number,
  ): { channel: string; subscribed: Promise<boolean> } {
    const channel = this.protocol.channel(resource, owner);
    let queue = this.queues.get(channel);
    const activeBefore = queue?.active === true;
    const rejoined = queue?.failed === true && queue.waiters.has(waiter);
    if (!queue || queue.failed) {
      const created: Queue = {
        waiters: new Set(queue?.waiters),
        ready: Promise.resolve(),
        active: false,
        failed: false,
        unlisten: undefined,
        unclaimed: queue?.unclaimed ?? [],
        forgottenAt: queue?.forgottenAt ?? Number.NEGATIVE_INFINITY,
        emptiedAt: Number.POSITIVE_INFINITY,
      };
      created.ready = this.listen(resource, owner, (notice) => this.notify(created, notice)).then(
        (unlisten) => {
          created.active = true;
          if (this.queues.get(channel) === created) created.unlisten = unlisten;
          else unlisten();
        },
        () => {
          created.failed = true;
        },
      );
      this.queues.set(channel, created);
      queue = created;
    }
    const joined = queue;
    const missed = !activeBefore || this.claim(joined, waiter, sentAt);
    joined.waiters.add(waiter);
    return { channel, subscribed: joined.ready.then(() => (rejoined ? joined.active : missed)) };
  }

  /** Whether the subscription of the queue `join` answered `channel` for has failed: its waiters should join again. */
  failed(channel: string): boolean {
    return this.queues.get(channel)?.failed === true;
  }

  /** Removes a waiter from the queue `join` answered; its unused notification goes to the next one. */
  leave(channel: string, waiter: Waiter): void {
    const queue = this.queues.get(channel);
    if (!queue?.waiters.delete(waiter)) return;
    if (waiter.notified) this.notify(queue, FIRST);
    if (queue.waiters.size > 0) return;
    queue.emptiedAt = performance.now();
    this.sweepLater(this.linger);
  }

  /**
   * A release of this locker wrote `resource`'s lock for one of its waiters: that waiter takes it
   * now, as the release message would tell it (which then finds it gone, and wakes nobody).
   */
  handOver(resource: string, grant: HandedGrant): void {
    const queue = this.queues.get(this.protocol.channel(resource, grant.owner));
    if (queue) this.notify(queue, { all: false, to: grant.owner, grant });
  }

  /** Ends every subscription (the locker is closing). */
  close(): void {
    clearTimeout(this.sweeper);
    this.sweeper = undefined;
    for (const queue of this.queues.values()) queue.unlisten?.();
    this.queues.clear();
  }

  private sweepLater(ms: number): void {
    if (this.sweeper) return;
    // Armed by whichever waiter left last; what it ends (and re-arms) is no longer that call's.
    this.sweeper = detached(() => setTimeout(() => this.sweep(), ms));
    this.sweeper.unref();
  }

  private sweep(): void {
    this.sweeper = undefined;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [channel, queue] of this.queues) {
      if (queue.waiters.size > 0) continue;
      const endsAt = queue.emptiedAt + this.linger;
      if (endsAt > now) {
        next = Math.min(next, endsAt);
        continue;
      }
      this.queues.delete(channel);
      queue.unlisten?.();
    }
    if (next < Number.POSITIVE_INFINITY) this.sweepLater(next - now);
  }

  /**
   * Wakes whom a release notice names: every waiter, the one owner it names (if it waits in
   * this process), or else the first.
   */
  private notify(queue: Queue, notice: ReleaseNotice): void {
    let taken = false;
    for (const waiter of queue.waiters) {
      if (notice.to !== undefined && waiter.owner !== notice.to) continue;
      taken = true;
      waiter.notified = true;
      if (notice.grant) waiter.granted = { grant: notice.grant, at: this.clock() };
      waiter.wake?.();
      if (!notice.all) break;
    }
    // A notice for every waiter also reaches those still joining.
    if (taken && !notice.all) return;
    queue.unclaimed.push({ at: this.clock(), to: notice.all ? undefined : notice.to, grant: notice.grant });
    if (queue.unclaimed.length > REMEMBERED) queue.forgottenAt = queue.unclaimed.shift()!.at;
  }

  /** Whether a notice that came since `sentAt` is `waiter`'s to act on (any grant in it is put on the waiter). */
  private claim(queue: Queue, waiter: Waiter, sentAt: number): boolean {
    if (queue.forgottenAt >= sentAt) return true;
    let missed = false;
    for (const notice of queue.unclaimed) {
      if (notice.at < sentAt || (notice.to !== undefined && notice.to !== waiter.owner)) continue;
      missed = true;
      if (notice.grant) waiter.granted = { grant: notice.grant, at: notice.at };
    }
    return missed;
  }
}
