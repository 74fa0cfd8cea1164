import { type RedisMasters, startMasters } from '@lock/testing';
import { Redis } from 'ioredis';
import { InvalidOptionError } from '../../src/errors.js';
import type { RedisClient } from '../../src/protocol.js';
import { tokenProtocol } from '../../src/protocols/token/token.js';
import { type QuorumBackendOptions, quorumBackend } from '../../src/redlock/index.js';

export const protocol = tokenProtocol();

/** N masters with one client each. */
export interface Nodes {
  readonly masters: RedisMasters;
  readonly clients: Redis[];
}

export async function startNodes(count: number): Promise<Nodes> {
  const masters = await startMasters(count);
  return { masters, clients: masters.clients() };
}

/** A quorum backend over the first `count` clients (all by default). */
export function backendOver(clients: readonly Redis[], options: Omit<QuorumBackendOptions, 'clients'> = {}) {
  return quorumBackend({ clients, protocol, ...options });
}

let sequence = 0;
/** A key no other test in this process uses. */
export function freshKey(label: string): string {
  sequence += 1;
  return `${label}:${sequence}`;
}

/** Who holds `resource` on each node (null where free). */
export function ownersOn(clients: readonly RedisClient[], resource: string): Promise<(string | null)[]> {
  return Promise.all(clients.map(async (client) => (await protocol.inspect(client, resource)).owner));
}

/** Every subset of `count` nodes as a bit mask, for exhaustive quorum tests. */
export function subsetsOf(count: number): number[] {
  return Array.from({ length: 2 ** count }, (_, mask) => mask);
}

export function membersOf(mask: number, count: number): number[] {
  return Array.from({ length: count }, (_, index) => index).filter((index) => (mask >> index) & 1);
}

/** A client that never connects: for options refused before anything is sent. */
export const idle = () => new Redis({ lazyConnect: true, enableOfflineQueue: false });

/** The `InvalidOptionError` that `build` throws; fails the test if it throws anything else, or nothing. */
export function refusal(build: () => unknown): InvalidOptionError {
  try {
    build();
  } catch (error) {
    if (error instanceof InvalidOptionError) return error;
    throw error;
  }
  throw new Error('accepted');
}
