import type { Redis } from 'ioredis';

/** Calls per command from `INFO commandstats` (commands run inside scripts count too). */
export async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const stats = await redis.info('commandstats');
  return new Map(
    [...stats.matchAll(/cmdstat_([a-z|_-]+):calls=(\d+)/g)].map((m) => [m[1]!, Number(m[2])] as const),
  );
}

/** How many more times each of `commands` was called in `after` than in `before`. */
export function callsBetween(
  before: Map<string, number>,
  after: Map<string, number>,
  commands: readonly string[],
): number {
  return commands.reduce((sum, name) => sum + (after.get(name) ?? 0) - (before.get(name) ?? 0), 0);
}

/** Keeps the event loop busy for `ms`: no timer, socket or promise callback runs meanwhile. */
export function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning on purpose
  }
}
