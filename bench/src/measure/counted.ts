import type { Redis } from 'ioredis';
import { commandCounts, commandDelta } from './commands.js';
import { roundTripsSent } from './round-trips.js';

/** What a measured stretch produced, with the Redis work it cost. */
export interface Counted<T> {
  readonly result: T;
  /** Commands the servers ran meanwhile, including those inside scripts (`INFO commandstats`). */
  readonly commands: number;
  /** Commands this process's clients sent meanwhile (one round trip each). */
  readonly roundTrips: number;
}

/** Runs `fn`, counting the commands `servers` ran and the round trips this process sent meanwhile. */
export async function counted<T>(servers: readonly Redis[], fn: () => Promise<T>): Promise<Counted<T>> {
  const before = await commandCounts(servers);
  const sentBefore = roundTripsSent();
  const result = await fn();
  const roundTrips = roundTripsSent() - sentBefore;
  const commands = commandDelta(before, await commandCounts(servers)).total;
  return { result, commands, roundTrips };
}

/** Sums the counts of several slices. */
export function totals(slices: readonly Counted<unknown>[]): { commands: number; roundTrips: number } {
  return {
    commands: slices.reduce((total, slice) => total + slice.commands, 0),
    roundTrips: slices.reduce((total, slice) => total + slice.roundTrips, 0),
  };
}
