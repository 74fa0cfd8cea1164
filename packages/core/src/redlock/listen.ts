import { ReleaseListener } from '../backends/release-listener.js';
import type { LockProtocol, RedisClient } from '../protocol.js';
import { fanOut } from './fan-out.js';

/**
 * Release notifications from every master, through one release listener (one subscriber
 * connection) per master. A release on any master wakes the waiter, which then makes a full
 * quorum attempt. A master that does not confirm the subscription within the node timeout
 * leaves the waiter on its polling fallback rather than blocking it.
 */
export class QuorumListeners {
  private readonly listeners: ReleaseListener[];

  constructor(
    clients: readonly RedisClient[],
    private readonly protocol: LockProtocol,
    private readonly timeout: number,
  ) {
    this.listeners = clients.map((client) => new ReleaseListener(client));
  }

  async listen(
    resource: string,
    waiter: string,
    onRelease: (wakesAll: boolean) => void,
  ): Promise<() => void> {
    const channel = this.protocol.channel(resource, waiter);
    let ended = false;
    // One release publishes on every master: the copies that arrive in one turn of the event
    // loop wake the waiter once, so it does not send a quorum attempt per master.
    let wakePending = false;
    let wakeAll = false;
    const wake = (message: string) => {
      if (!(this.protocol.isReleaseMessage?.(message) ?? true)) return;
      wakeAll ||= this.protocol.wakesAll?.(message) ?? false;
      if (wakePending) return;
      wakePending = true;
      setImmediate(() => {
        const all = wakeAll;
        wakePending = false;
        wakeAll = false;
        if (!ended) onRelease(all);
      });
    };
    const stops: (() => void)[] = [];
    const keep = (stop: () => void) => {
      if (ended) stop();
      else stops.push(stop);
    };
    await fanOut(this.listeners, this.timeout, async (listener) => {
      // A subscription confirmed after the timeout is still kept, and ended with the others.
      keep(await listener.listen(channel, wake));
    });
    return () => {
      ended = true;
      for (const stop of stops.splice(0)) stop();
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.listeners.map((listener) => listener.close()));
  }
}
