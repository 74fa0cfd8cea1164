import type { ReleaseNotice } from '../backend.js';
import { type ListenerLease, sharedListener } from '../backends/release-listener.js';
import { releaseNotice } from '../backends/single.js';
import type { LockProtocol, RedisClient } from '../protocol.js';
import { fanOut } from './fan-out.js';

/**
 * Release notifications from every master, through the release listener shared on each master's
 * client (see `sharedListener`): one subscriber connection per client, whatever lockers, RedLock
 * or single-server, wait on it. A release on any master wakes the waiter, which then makes a full
 * quorum attempt. A master that does not confirm the subscription within the node timeout
 * leaves the waiter on its polling fallback rather than blocking it. No inbox: a quorum attempt
 * names none, so releases publish on the lock's channel.
 */
export class QuorumListeners {
  private readonly leases: ListenerLease[];
  /** The listens not yet ended: ended by `close`, the shared listeners outliving this locker. */
  private readonly active = new Set<() => void>();
  private closed = false;

  constructor(
    clients: readonly RedisClient[],
    private readonly protocol: LockProtocol,
    private readonly timeout: number,
  ) {
    this.leases = clients.map((client) => sharedListener(client));
  }

  async listen(
    resource: string,
    waiter: string,
    onRelease: (notice: ReleaseNotice) => void,
  ): Promise<() => void> {
    // Closed: the leases are given up, and the listeners may be others' now; the waiter polls.
    if (this.closed) return () => {};
    const channel = this.protocol.channel(resource, waiter);
    let ended = false;
    // One release publishes on every master: the copies that arrive in one turn of the event
    // loop wake once (each named owner once), so a waiter does not send a quorum attempt per master.
    let pending: ReleaseNotice[] | undefined;
    const wake = (message: string) => {
      if (!(this.protocol.isReleaseMessage?.(message) ?? true)) return;
      const notice = releaseNotice(this.protocol, message);
      if (pending) {
        pending.push(notice);
        return;
      }
      pending = [notice];
      setImmediate(() => {
        const notices = pending ?? [];
        pending = undefined;
        if (!ended) for (const merged of mergeNotices(notices)) onRelease(merged);
      });
    };
    const stops: (() => void)[] = [];
    const keep = (stop: () => void) => {
      if (ended) stop();
      else stops.push(stop);
    };
    const end = () => {
      ended = true;
      this.active.delete(end);
      for (const stop of stops.splice(0)) stop();
    };
    this.active.add(end);
    await fanOut(this.leases, this.timeout, async ({ listener }) => {
      // A subscription confirmed after the timeout is still kept, and ended with the others.
      keep(await listener.listen(channel, wake));
    });
    return end;
  }

  /** Ends this locker's listens and gives up its leases, once: the last user of a client's listener closes it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const end of [...this.active]) end();
    await Promise.all(this.leases.map((lease) => lease.release()));
  }
}

/**
 * The copies of one release from every master, as the fewest notices: one for all when any
 * frees every waiter, else one per owner the masters named, else one for the first waiter.
 */
function mergeNotices(notices: readonly ReleaseNotice[]): ReleaseNotice[] {
  if (notices.some((notice) => notice.all)) return [{ all: true, to: undefined }];
  const named = new Set(notices.flatMap((notice) => (notice.to === undefined ? [] : [notice.to])));
  if (named.size === 0) return [{ all: false, to: undefined }];
  return [...named].map((to) => ({ all: false, to }));
}
