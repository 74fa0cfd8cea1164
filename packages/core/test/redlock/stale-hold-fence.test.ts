import { randomUUID } from 'node:crypto';
import { fenceCounter } from '@lock/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LockProtocol, RedisClient } from '../../src/protocol.js';
import { SEEDED_FENCE } from '../../src/redlock/fence.js';
import { backendOver, freshKey, type Nodes, protocol, startNodes } from './support.js';

// An explicit owner's hold that a minority kept after the lease was declared lost (the release of
// it there was lost) must not hand that owner's next acquisition a fence below the last holder's.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(5);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/** The token protocol, with the releases and fence raises sent to the masters in `lost` dropped on the way. */
function lossy() {
  const lost = { release: new Set<RedisClient>(), raiseFence: new Set<RedisClient>() };
  const dropped = () => Promise.reject(new Error('connection lost'));
  const wrapped: LockProtocol = {
    ...protocol,
    release: (redis, ...rest) => (lost.release.has(redis) ? dropped() : protocol.release(redis, ...rest)),
    raiseFence: (redis, ...rest) =>
      lost.raiseFence.has(redis) ? dropped() : protocol.raiseFence!(redis, ...rest),
  };
  return { protocol: wrapped, lost };
}

/** A hold of someone else written directly, so that the master refuses without drawing a fence. */
async function occupy(index: number, resource: string): Promise<void> {
  await nodes.clients[index]!.hset(`{${resource}}`, 'occupier', 1);
  await nodes.clients[index]!.pexpire(`{${resource}}`, 10_000);
}

describe('RedLock fence after a lost hold', () => {
  it("an explicit owner's next acquisition draws above the last holder's fence past its stale hold", async () => {
    const clients = nodes.clients;
    const faults = lossy();
    const backend = backendOver(clients, { protocol: faults.protocol, nodeTimeout: 500 });
    const resource = freshKey('stale-hold-fence');
    const counter = fenceCounter(resource, `{${resource}}`, false);
    const base = SEEDED_FENCE + 1_000;
    for (const client of clients) await client.set(counter, base);
    const attempt = () => ({ wait: 0, attempt: randomUUID() });

    const first = await backend.acquire(resource, 'owner', 30_000, attempt());
    if (!first.acquired) throw new Error('first acquisition refused');
    // Masters 1 to 4 lost the key: the lease is lost, and the release of it on master 0 is lost too.
    for (const client of clients.slice(1)) await client.del(`{${resource}}`);
    faults.lost.release.add(clients[0]!);
    expect(await backend.extend(resource, 'owner', first.token, 30_000)).toBeNull();
    faults.lost.release.clear();
    expect((await protocol.inspect(clients[0]!, resource)).owner).toBe('owner');

    // The next holder, refused by master 0, draws its fence on master 1 (ahead) and publishes it
    // on masters 0, 1 and 2: the raises sent to 3 and 4 are lost.
    await clients[1]!.set(counter, base + 50);
    faults.lost.raiseFence.add(clients[3]!).add(clients[4]!);
    const next = await backend.acquire(resource, 'next', 30_000, { wait: 0, fresh: true });
    faults.lost.raiseFence.clear();
    if (!next.acquired) throw new Error('next acquisition refused');
    expect(await backend.release(resource, 'next', next.token)).toBe('released');

    // The owner again, answered by master 0 (its stale hold) and masters 3 and 4, which the
    // last fence never reached: master 0 is all this majority shares with the last one.
    await occupy(1, resource);
    await occupy(2, resource);
    const again = await backend.acquire(resource, 'owner', 30_000, attempt());
    if (!again.acquired) throw new Error('later acquisition refused');
    expect(again.holds).toBe(1);
    expect(again.fence).toBeGreaterThan(next.fence);
    // The stale hold on master 0 now carries the new fence: a re-entry it answers reports that one.
    expect((await protocol.inspect(clients[0]!, resource)).fence).toBe(again.fence);
    await backend.close();
  });

  it('gives the new fence to the stale hold when the masters that drew it need no write-back', async () => {
    const clients = nodes.clients;
    const faults = lossy();
    const backend = backendOver(clients, { protocol: faults.protocol, nodeTimeout: 500 });
    const resource = freshKey('stale-hold-kept');
    const counter = fenceCounter(resource, `{${resource}}`, false);
    const base = SEEDED_FENCE + 1_000;
    for (const client of clients) await client.set(counter, base);

    const first = await backend.acquire(resource, 'owner', 30_000, { wait: 0, attempt: randomUUID() });
    if (!first.acquired) throw new Error('first acquisition refused');
    for (const client of clients.slice(1)) await client.del(`{${resource}}`);
    faults.lost.release.add(clients[0]!);
    expect(await backend.extend(resource, 'owner', first.token, 30_000)).toBeNull();
    faults.lost.release.clear();

    // Masters 1 to 4 draw one fence above master 0's counter: a majority already at it.
    for (const client of clients.slice(1)) await client.set(counter, base + 50);
    const again = await backend.acquire(resource, 'owner', 30_000, { wait: 0, attempt: randomUUID() });
    if (!again.acquired) throw new Error('later acquisition refused');
    expect(again).toMatchObject({ holds: 1, fence: base + 51 });
    expect((await protocol.inspect(clients[0]!, resource)).fence).toBe(again.fence);
    await backend.close();
  });
});
