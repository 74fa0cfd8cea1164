import { randomUUID } from 'node:crypto';
import { fenceCounter } from '@lock/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SEEDED_FENCE } from '../../src/redlock/fence.js';
import { backendOver, freshKey, type Nodes, protocol, startNodes } from './support.js';

let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/** NOSCRIPT errors the server answered since its stats were last reset. */
async function noScriptErrors(redis: Redis): Promise<number> {
  const stats = await redis.info('errorstats');
  return Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(stats)?.[1] ?? 0);
}

/**
 * The fence write-back (raiseFence) and a re-entered hold's fence (keepFence) run only after the
 * masters' counters diverged or a master lost the key, mostly the first time on that server: as
 * EVALSHA, each cost a NOSCRIPT answer and a second round trip, inside the acquisition.
 */
it('writes fences back and keeps a re-entered fence without a NOSCRIPT round trip', async () => {
  const clients = nodes.clients;
  const backend = backendOver(clients, { nodeTimeout: 500 });
  const resource = freshKey('fence-scripts');
  const counter = fenceCounter(resource, `{${resource}}`, false);
  const base = SEEDED_FENCE + 1_000;
  for (const client of clients) await client.set(counter, base);
  // Counters in step: one fence everywhere, no write-back; the servers learn the acquire script.
  const first = await backend.acquire(resource, 'owner', 30_000, { wait: 0, attempt: randomUUID() });
  expect(first).toMatchObject({ acquired: true, fence: base + 1 });
  for (const client of clients) await client.config('RESETSTAT');

  // Master 2 lost the key: the re-entry is a first acquisition there, given the hold's fence.
  await clients[2]!.del(`{${resource}}`);
  const inner = await backend.acquire(resource, 'owner', 30_000, { wait: 0, attempt: randomUUID() });
  expect(inner).toMatchObject({ acquired: true, holds: 2, fence: base + 1 });

  // Master 0's counter is ahead: the next fence is written back to masters 1 and 2.
  await clients[0]!.set(counter, base + 100);
  const other = await backend.acquire(freshKey('fence-scripts'), 'other', 30_000, { wait: 0, fresh: true });
  expect(other).toMatchObject({ acquired: true, fence: base + 101 });
  expect(await Promise.all(clients.map((client) => client.get(counter)))).toEqual(
    clients.map(() => String(base + 101)),
  );

  expect(await Promise.all(clients.map(noScriptErrors))).toEqual([0, 0, 0]);
  // (Read after the count: the inspect script is new to the server too.)
  expect((await protocol.inspect(clients[2]!, resource)).fence).toBe(base + 1);
  await backend.close();
});
