import type { LockBackend, ReleaseNotice } from '../backend.js';
import type { HandedGrant } from '../protocol.js';

/** One acquire call waiting for a key. */
export interface Waiter {
  /** The owner the call acquires as: a release may name it as the one to try next. */
  readonly owner: string;
  /** A release arrived that this waiter has not yet tried to act on. */
  notified: boolean;
  /** The lock a release wrote for this waiter (a direct grant), not yet taken. */
  granted: HandedGrant | undefined;
  /** Set while the waiter sleeps: ends the sleep early. */
  wake: (() => void) | undefined;
}

/** A notice for the first waiter, whoever it is. */
const FIRST: ReleaseNotice = { all: false, to: undefined };

interface Queue {
  readonly waiters: Set<Waiter>;
  /** Resolves once the release subscription is active (or failed: then waiters only poll). */
  ready: Promise<void>;
  unlisten: (() => void) | undefined;
}

/**
 * The waiters of this locker, per key, in arrival order. A release message wakes only the
 * first waiter: waking every waiter of the process would send attempts that all but one lose.
 * A waiter that leaves with an unused notification hands it to the next one, so no release
 * is dropped. Polling with backoff remains the bound when a message is lost.
 */
export class WaitQueues {
  private readonly queues = new Map<string, Queue>();

  constructor(private readonly backend: LockBackend) {}

  /**
   * Adds a waiter for `resource`; resolves once release messages can reach it, with the queue's
   * channel and whether this call started the subscription (a release may then have slipped
   * through unseen, so the caller should try again at once). Queues are kept per release
   * channel: formats that address one waiter (fair locks) get a queue per waiter.
   */
  async join(
    resource: string,
    owner: string,
    waiter: Waiter,
  ): Promise<{ channel: string; subscribed: boolean }> {
    const channel = this.backend.protocol.channel(resource, owner);
    let queue = this.queues.get(channel);
    const subscribed = !queue;
    if (!queue) {
      const created: Queue = { waiters: new Set(), ready: Promise.resolve(), unlisten: undefined };
      created.ready = this.backend
        .listen(resource, owner, (notice) => this.notify(created, notice))
        .then(
          (unlisten) => {
            if (this.queues.get(channel) === created) created.unlisten = unlisten;
            else unlisten();
          },
          () => {},
        );
      this.queues.set(channel, created);
      queue = created;
    }
    queue.waiters.add(waiter);
    await queue.ready;
    return { channel, subscribed };
  }

  /** Removes a waiter from the queue `join` answered; its unused notification goes to the next one. */
  leave(channel: string, waiter: Waiter): void {
    const queue = this.queues.get(channel);
    if (!queue?.waiters.delete(waiter)) return;
    if (waiter.notified) this.notify(queue, FIRST);
    if (queue.waiters.size > 0) return;
    this.queues.delete(channel);
    queue.unlisten?.();
  }

  /**
   * Wakes whom a release notice names: every waiter, the one owner it names (if it waits in
   * this process), or else the first.
   */
  private notify(queue: Queue, notice: ReleaseNotice): void {
    for (const waiter of queue.waiters) {
      if (notice.to !== undefined && waiter.owner !== notice.to) continue;
      waiter.notified = true;
      if (notice.grant) waiter.granted = notice.grant;
      waiter.wake?.();
      if (!notice.all) return;
    }
  }
}
