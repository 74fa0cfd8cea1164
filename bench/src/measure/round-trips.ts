import { Redis } from 'ioredis';

/**
 * Counts the commands this process sends on ready connections: each is one round trip, as no
 * subject pipelines. Counted client-side because the server's counters (`INFO commandstats`,
 * `total_commands_processed`) also count the calls a Lua script makes inside the server.
 * Connections made with `duplicate()` (subscribers) are counted too; the harness's own are not.
 */
let sent = 0;
let installed = false;
const ignored = new WeakSet<object>();

export function countRoundTrips(): void {
  if (installed) return;
  installed = true;
  const prototype = Redis.prototype as unknown as { sendCommand(this: Redis, ...args: unknown[]): unknown };
  const original = prototype.sendCommand;
  prototype.sendCommand = function (this: Redis, ...args: unknown[]) {
    // A command queued while connecting comes back through here once ready: count it then only.
    if (this.status === 'ready' && !ignored.has(this)) sent++;
    return original.apply(this, args);
  };
}

/** Leaves the harness's own connections (reading counters, flushing) out of the count. */
export function ignoreRoundTrips(redis: Redis): Redis {
  ignored.add(redis);
  return redis;
}

export function roundTripsSent(): number {
  return sent;
}
