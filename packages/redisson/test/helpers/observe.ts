import type { Redis } from 'ioredis';

/** One key as Appendix A dumps it. */
export interface KeyDump {
  readonly type: string;
  readonly pttl: number;
  readonly value: unknown;
}

/** Every key on the server with its type, PTTL and value (hash → object, list → array, zset → member → score). */
export async function dump(redis: Redis): Promise<Record<string, KeyDump>> {
  const out: Record<string, KeyDump> = {};
  for (const key of (await redis.keys('*')).sort()) {
    const [type, pttl] = await Promise.all([redis.type(key), redis.pttl(key)]);
    out[key] = { type, pttl, value: await read(redis, key, type) };
  }
  return out;
}

async function read(redis: Redis, key: string, type: string): Promise<unknown> {
  if (type === 'hash') return redis.hgetall(key);
  if (type === 'list') return redis.lrange(key, 0, -1);
  if (type === 'zset') {
    const flat = await redis.zrange(key, '0', '-1', 'WITHSCORES');
    const scores: Record<string, number> = {};
    for (let i = 0; i < flat.length; i += 2) scores[flat[i]!] = Number(flat[i + 1]);
    return scores;
  }
  return redis.get(key);
}

/** A message seen on the server, from a PSUBSCRIBE * (plain pub/sub) client. */
export interface Published {
  readonly channel: string;
  readonly message: string;
}

/** Records every PUBLISH on the server; `take()` returns and clears what arrived so far. */
export async function recordPublished(subscriber: Redis): Promise<{ take(): Promise<Published[]> }> {
  let seen: Published[] = [];
  subscriber.on('pmessage', (_pattern: string, channel: string, message: string) =>
    seen.push({ channel, message }),
  );
  await subscriber.psubscribe('*');
  return {
    async take() {
      // A PING on the subscriber answers after every message published before it was sent.
      await subscriber.ping();
      const taken = seen;
      seen = [];
      return taken;
    },
  };
}

/** Records the commands scripts run (MONITOR lines from "lua"), each as [command in lower case, ...args]. */
export async function recordScriptCommands(monitorFrom: Redis): Promise<{
  take(): Promise<string[][]>;
  stop(): void;
}> {
  const monitor = await monitorFrom.monitor();
  let seen: string[][] = [];
  const markers = new Map<string, () => void>();
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const command = args[0]!.toLowerCase();
    if (command === 'echo' && markers.has(args[1]!)) markers.get(args[1]!)?.();
    else if (source.startsWith('lua')) seen.push([command, ...args.slice(1)]);
  });
  let count = 0;
  return {
    // MONITOR reports commands in execution order: once our ECHO shows up, everything before it has.
    async take() {
      count += 1;
      const marker = `marker-${count}`;
      const reached = new Promise<void>((resolve) => markers.set(marker, resolve));
      await monitorFrom.echo(marker);
      await reached;
      markers.delete(marker);
      const taken = seen;
      seen = [];
      return taken;
    },
    stop: () => monitor.disconnect(),
  };
}
