import { createServer } from 'node:net';

/**
 * A loopback port that was free a moment ago. Another process may still take it before
 * redis-server binds it, so callers retry on "address in use" (see `startServerProcess`).
 * Ports are drawn from a range above the ones Linux hands out for outgoing connections' peers
 * of common services, and the cluster bus port (port + 10000) must stay below 65536.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 35_000);
    if ((await canBind(port)) && (await canBind(port + 10_000))) return port;
  }
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host: '127.0.0.1', exclusive: true }, () => probe.close(() => resolve(true)));
  });
}
