import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quorumOf } from '../../src/redlock/quorum.js';
import {
  backendOver,
  freshKey,
  membersOf,
  type Nodes,
  ownersOn,
  protocol,
  startNodes,
  subsetsOf,
} from './support.js';

// S16: every subset of masters pre-held by a foreign owner, for N = 3, 4, 5.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(5);
});
afterAll(async () => {
  await nodes.masters.stop();
});

describe.each([3, 4, 5])('RedLock over %i masters, every subset pre-held by a foreign owner', (count) => {
  it(`grants iff the free masters reach a quorum of ${quorumOf(count)}, and leaves none of its tokens on failure`, async () => {
    const clients = nodes.clients.slice(0, count);
    // Every master is up: one the loaded host left unscheduled past the default 250 ms would
    // count as timed out, turning a grant by exactly a quorum into a refusal.
    const backend = backendOver(clients, { nodeTimeout: 5_000 });
    const quorum = quorumOf(count);
    let granted = 0;
    for (const mask of subsetsOf(count)) {
      const resource = freshKey(`subset-${count}-${mask}`);
      const taken = membersOf(mask, count);
      for (const index of taken) await protocol.acquire(clients[index]!, resource, 'foreign', 10_000);

      const reply = await backend.acquire(resource, 'me', 10_000);
      const free = count - taken.length;
      const owners = await ownersOn(clients, resource);

      expect(reply.acquired, `mask ${mask.toString(2)}: ${free} free of ${count}`).toBe(free >= quorum);
      if (reply.acquired) {
        granted++;
        expect(owners.filter((owner) => owner === 'me')).toHaveLength(free);
        expect(await backend.release(resource, 'me', reply.token)).toBe('released');
        expect((await ownersOn(clients, resource)).filter((owner) => owner === 'me')).toHaveLength(0);
      } else {
        expect(owners).not.toContain('me');
        expect(reply.remaining).toBeGreaterThan(0);
      }
      expect(owners.filter((owner) => owner === 'foreign')).toHaveLength(taken.length);
    }
    const expectedGrants = subsetsOf(count).filter((mask) => count - membersOf(mask, count).length >= quorum);
    expect(granted).toBe(expectedGrants.length);
    await backend.close();
  });
});
