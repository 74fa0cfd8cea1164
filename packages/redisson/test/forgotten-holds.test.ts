import { getEventListeners } from 'node:events';
import { waitFor } from '@lock/testing';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ClientCore } from '../src/client.js';
import { type RedissonSetup, useRedisson } from './helpers/server.js';

/** The holds a client keeps for its threads' unlocks (private: what the test watches for growth). */
const kept = (client: ClientCore): number =>
  [...(client as unknown as { handles: Map<string, unknown[]> }).handles.values()].flat().length;

/**
 * "Lock for 10 s and let it expire" (a Java `tryLock(0, 10, SECONDS)` as a dedupe) never calls
 * unlock: a client serving such requests for days must not keep one hold per request.
 */
describe('holds never unlocked', () => {
  let setup!: RedissonSetup;
  useRedisson((given) => {
    setup = given;
  });

  it('a hold left to its lease is forgotten once its lease ran out, and its thread holds nothing', async () => {
    const client = new ClientCore({ redis: setup.redis });
    onTestFinished(() => client.close());
    // Leases long enough that none ends while the 20 are taken on a loaded machine (100 ms did).
    for (let thread = 1; thread <= 20; thread += 1) {
      await client.acquire('lock', `dedupe:${thread}`, { thread, lease: 1_000, wait: 0 });
    }
    expect(kept(client)).toBe(20);
    await waitFor('every hold forgotten once its lease ran out', async () => kept(client) === 0, {
      timeout: 5_000,
    });
    // The client forgets a hold at the end of its validity, which is a drift margin short of the
    // lease Redis keeps: the keys go by their TTL a few ms later.
    await waitFor(
      'the keys gone by their TTL',
      async () => (await setup.redis.keys('dedupe:*')).length === 0,
      {
        timeout: 1_000,
      },
    );
    await expect(client.unlock('lock', 'dedupe:1', 1)).rejects.toThrow(/not held/);
  });

  it("a hold re-entered and unlocked over and over keeps no listener per re-entry on the hold's signal", async () => {
    const client = new ClientCore({ redis: setup.redis });
    onTestFinished(() => client.close());
    const outer = await client.acquire('lock', 'outer', { thread: 1, wait: 0 });
    const before = getEventListeners(outer.signal, 'abort').length;
    for (let cycle = 0; cycle < 20; cycle += 1) {
      await client.acquire('lock', 'outer', { thread: 1, lease: 60_000, wait: 0 });
      await client.unlock('lock', 'outer', 1);
    }
    // Each re-entry's handle shares the hold's signal: one left per unlocked handle would grow
    // with the hold's life (and warn past ten).
    expect(getEventListeners(outer.signal, 'abort').length).toBe(before);
    await client.unlock('lock', 'outer', 1);
  });

  it('holds released by shutdown() stay for their unlocks, which answer what that release did', async () => {
    const client = new ClientCore({ redis: setup.redis });
    await client.acquire('lock', 'closing', { thread: 1, wait: 0 });
    await client.acquire('lock', 'closing', { thread: 1, wait: 0 });
    await client.close();
    expect(await setup.redis.exists('closing')).toBe(0);
    await client.unlock('lock', 'closing', 1);
    await client.unlock('lock', 'closing', 1);
    await expect(client.unlock('lock', 'closing', 1)).rejects.toThrow(/not held/);
  });
});
