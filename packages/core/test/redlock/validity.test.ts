import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driftOf } from '../../src/redlock/quorum.js';
import { backendOver, freshKey, type Nodes, ownersOn, startNodes } from './support.js';

// S4: validity = ttl − elapsed − drift, measured from the attempt's start; never a grant with validity ≤ 0.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/** A clock on which every attempt (a pair of readings: start, end) takes exactly `elapsed` ms. */
function clockWhereAttemptsTake(elapsed: number): () => number {
  let readings = 0;
  return () => {
    readings += 1;
    return readings % 2 === 1 ? 1_000 : 1_000 + elapsed;
  };
}

describe('RedLock validity accounting', () => {
  it.each([100, 1_000, 10_000])(
    'with ttl %i grants exactly ttl − elapsed − drift, and refuses at 0',
    async (ttl) => {
      const drift = driftOf(ttl, 0.01);
      const lastGood = backendOver(nodes.clients, { clock: clockWhereAttemptsTake(ttl - drift - 1) });
      const resource = freshKey('validity');
      const grant = await lastGood.acquire(resource, 'me', ttl);
      expect(grant).toMatchObject({ acquired: true, validity: 1 });
      if (grant.acquired) await lastGood.release(resource, 'me', grant.token);

      for (const elapsed of [ttl - drift - 0.5, ttl - drift, ttl]) {
        const tooSlow = backendOver(nodes.clients, { clock: clockWhereAttemptsTake(elapsed) });
        expect(await tooSlow.acquire(resource, 'me', ttl), `elapsed ${elapsed}`).toEqual({
          acquired: false,
          remaining: -1,
        });
        expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
      }
    },
  );

  it('refuses, and cleans every node, when a paused master makes the attempt outlast the ttl', async () => {
    const backend = backendOver(nodes.clients, { nodeTimeout: 400 });
    const resource = freshKey('validity-paused');
    const paused = nodes.masters.servers[2]!;
    paused.pause();
    try {
      expect(await backend.acquire(resource, 'me', 300)).toEqual({ acquired: false, remaining: -1 });
      expect(await ownersOn(nodes.clients.slice(0, 2), resource)).toEqual([null, null]);
    } finally {
      paused.resume();
    }
    // The paused node runs the queued acquire and then the queued release, in order: nothing stays.
    await nodes.clients[2]!.ping();
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
    expect(backend.stats.releaseFailures).toBe(1);
  });

  it('grants with a paused minority, with a validity no longer than ttl − node timeout − drift', async () => {
    const backend = backendOver(nodes.clients, { nodeTimeout: 250 });
    const resource = freshKey('validity-minority');
    const paused = nodes.masters.servers[0]!;
    paused.pause();
    let grant: Awaited<ReturnType<typeof backend.acquire>>;
    const started = performance.now();
    try {
      grant = await backend.acquire(resource, 'me', 1_000);
    } finally {
      paused.resume();
    }
    const took = performance.now() - started;
    if (!grant.acquired) throw new Error('refused with a majority up');
    expect(grant.validity).toBeLessThanOrEqual(1_000 - 250 - driftOf(1_000, 0.01));
    // Measured from the attempt's start, so no shorter than what the whole call left.
    expect(grant.validity).toBeGreaterThanOrEqual(Math.floor(1_000 - took - driftOf(1_000, 0.01)));
    expect(await backend.release(resource, 'me', grant.token)).toBe('released');
    await nodes.clients[0]!.ping();
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
  });
});
