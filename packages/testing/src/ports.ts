import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * The first port the kernel hands out to outgoing connections (Linux default 32768). Servers
 * stay below it so that no client socket can take their port between a probe and the bind, or
 * while a server is down for `restart()`.
 */
function ephemeralStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    return Number(low) || 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A loopback port that was free a moment ago, and whose cluster bus port (port + 10000) was too.
 * Another process may still take it before redis-server binds it, so callers retry on "address
 * in use" (see `RedisServer.start`); drawing at random keeps parallel test files apart.
 */
export async function freePort(): Promise<number> {
  const low = 10_000;
  const high = Math.max(low + 1_000, ephemeralStart() - 10_000);
  for (;;) {
    const port = low + Math.floor(Math.random() * (high - low));
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
