import type { Cluster, Redis } from 'ioredis';

/** The clients a topology handed out, so that stopping it also disconnects them. */
export class OwnedClients {
  private readonly live = new Set<Redis | Cluster>();

  add<C extends Redis | Cluster>(client: C): C {
    // Tests break servers on purpose; connection errors are expected and retried by ioredis.
    client.on('error', () => {});
    this.live.add(client);
    client.once('end', () => this.live.delete(client));
    return client;
  }

  disconnectAll(): void {
    for (const client of this.live) client.disconnect();
    this.live.clear();
  }
}
