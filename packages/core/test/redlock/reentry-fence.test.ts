import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedlock } from '../../src/redlock/index.js';
import { freshKey, type Nodes, protocol, startNodes } from './support.js';

// A re-entry keeps the fence of the hold it re-enters, also when a master had lost the key and
// granted the re-entry as a first acquisition, drawing a fence of its own.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/** Runs `fn` with master `index` frozen (SIGSTOP), then thaws it and drains what it queued. */
async function withPaused<T>(index: number, fn: () => Promise<T>): Promise<T> {
  nodes.masters.servers[index]!.pause();
  try {
    return await fn();
  } finally {
    nodes.masters.servers[index]!.resume();
    await nodes.clients[index]!.ping();
  }
}

describe('RedLock re-entry fence', () => {
  it('reports the outer fence when a master that lost the key grants the re-entry afresh', async () => {
    const locker = createRedlock({ clients: nodes.clients, prefix: '', nodeTimeout: 200 });
    const key = freshKey('reentry-fence');
    await locker.using(key, { ttl: 20_000 }, async (outer) => {
      // Master 2 lost the key (restarted, evicted): its counter gives the re-entry the next fence.
      await nodes.clients[2]!.del(`{${key}}`);
      await locker.using(key, { ttl: 20_000 }, async (inner) => {
        expect(inner.holds).toBe(2);
        expect(inner.fence).toBe(outer.fence);
        expect((await protocol.inspect(nodes.clients[2]!, key)).fence).toBe(outer.fence);
        // Answered by masters 1 and 2 alone, a further re-entry reports the hold's fence too.
        const third = await withPaused(0, () => locker.acquire(key, { ttl: 20_000 }));
        expect(third.holds).toBeGreaterThan(1);
        expect(third.fence).toBe(outer.fence);
        await third.release();
      });
    });
    expect(await locker.isLocked(key)).toBe(false);
    await locker.close();
  });
});
