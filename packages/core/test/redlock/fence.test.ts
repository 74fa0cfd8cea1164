import { fenceCounter } from '@lock/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backendOver, freshKey, type Nodes, startNodes } from './support.js';

// G6: the fence is a quorum max-register, strictly increasing across owners even when
// consecutive owners are served by different majorities.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(5);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/**
 * Occupies the lock on one node by writing the token format's hash directly, so the node
 * refuses without bumping its fence counter: the counters of the masters then drift apart,
 * which is what makes a fence taken only as the max of one majority go backwards.
 */
async function occupy(index: number, resource: string): Promise<void> {
  await nodes.clients[index]!.hset(`{${resource}}`, 'occupier', 1);
  await nodes.clients[index]!.pexpire(`{${resource}}`, 10_000);
}

async function vacate(index: number, resource: string): Promise<void> {
  await nodes.clients[index]!.del(`{${resource}}`);
}

describe('RedLock fence', () => {
  it.each([
    [3, [[2], [0], [1], [2], [0], [1]]],
    [
      5,
      [
        [3, 4],
        [0, 1],
        [2, 3],
        [4, 0],
        [1, 2],
        [3, 4],
        [0, 2],
        [1, 3],
        [2, 4],
        [0, 3],
      ],
    ],
  ])(
    'strictly increases over %i masters when each owner is served by a different majority',
    async (count, rounds) => {
      const clients = nodes.clients.slice(0, count);
      const backend = backendOver(clients);
      const resource = freshKey('fence');
      const fences: number[] = [];
      for (const [round, occupied] of rounds.entries()) {
        for (const index of occupied) await occupy(index, resource);
        const grant = await backend.acquire(resource, `owner-${round}`, 10_000);
        if (!grant.acquired) throw new Error(`round ${round} was refused`);
        fences.push(grant.fence);
        await backend.release(resource, `owner-${round}`, grant.token);
        for (const index of occupied) await vacate(index, resource);
      }
      const counters = await Promise.all(
        clients.map((client) => client.get(fenceCounter(resource, `{${resource}}`, false))),
      );
      for (const [round, fence] of fences.entries()) {
        if (round > 0)
          expect(fence, `round ${round} of ${fences.join(', ')}`).toBeGreaterThan(fences[round - 1]!);
      }
      // The write-back left the last fence on a majority, where the next owner's majority will meet it.
      const last = fences.at(-1)!;
      expect(counters.filter((counter) => Number(counter) >= last).length).toBeGreaterThanOrEqual(
        backend.quorum,
      );
      await backend.close();
    },
  );

  it('a re-entry answered by another majority reports the fence the first handle was given', async () => {
    const clients = nodes.clients.slice(0, 3);
    const backend = backendOver(clients, { nodeTimeout: 200 });
    const resource = freshKey('fence-reentry');
    // Master 0's counter is ahead (other locks of the namespace drew fences there).
    await clients[0]!.set(fenceCounter(resource, `{${resource}}`, false), '100');
    const first = await backend.acquire(resource, 'me', 10_000);
    if (!first.acquired) throw new Error('refused');
    expect(first.fence).toBeGreaterThan(100);
    const slow = nodes.masters.servers[0]!;
    slow.pause();
    let second: Awaited<ReturnType<typeof backend.acquire>>;
    try {
      second = await backend.acquire(resource, 'me', 10_000);
    } finally {
      slow.resume();
    }
    expect(second).toMatchObject({ acquired: true, holds: 2, fence: first.fence });
    await backend.close();
  });
});
