import type { Redis } from 'ioredis';

/** Calls per command name, summed over servers. */
export type CommandCounts = Record<string, number>;

/** Commands the harness itself sends to read the counters; never charged to a subject. */
const harnessCommands = new Set(['info', 'flushall', 'ping', 'config|resetstat', 'config']);

/** Reads `INFO commandstats` on every server and sums the calls per command. */
export async function commandCounts(servers: readonly Redis[]): Promise<CommandCounts> {
  const counts: CommandCounts = {};
  for (const redis of servers) {
    const text = await redis.info('commandstats');
    for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      const [, name, calls] = match;
      if (name === undefined || harnessCommands.has(name)) continue;
      counts[name] = (counts[name] ?? 0) + Number(calls);
    }
  }
  return counts;
}

/** What was sent between two readings, per command, and in total. */
export function commandDelta(
  before: CommandCounts,
  after: CommandCounts,
): { total: number; byCommand: CommandCounts } {
  const byCommand: CommandCounts = {};
  let total = 0;
  for (const [name, calls] of Object.entries(after)) {
    const delta = calls - (before[name] ?? 0);
    if (delta === 0) continue;
    byCommand[name] = delta;
    total += delta;
  }
  return { total, byCommand };
}
