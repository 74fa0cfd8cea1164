import { waitFor } from '@lock/testing';
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

/**
 * Puts master 2's counter for `key` ahead the ordinary way: attempts a majority refused (another
 * owner holds the key on masters 0 and 1) still drew a fence there before they were undone.
 */
async function aheadOnMaster2(key: string): Promise<void> {
  const pair = createRedlock({ clients: nodes.clients.slice(0, 2), prefix: '', nodeTimeout: 200 });
  const contender = createRedlock({ clients: nodes.clients, prefix: '', nodeTimeout: 200 });
  const other = await pair.acquire(key, { ttl: 20_000 });
  for (let i = 0; i < 5; i++) expect(await contender.tryAcquire(key)).toBeNull();
  await other.release();
  await Promise.all([pair.close(), contender.close()]);
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

  it('keeps the hold fence for a re-entry a master answers with the fence of its late grant', async () => {
    const key = freshKey('late-reentry');
    await aheadOnMaster2(key);
    const locker = createRedlock({ clients: nodes.clients, prefix: '', nodeTimeout: 1_000 });
    nodes.masters.servers[2]!.pause();
    try {
      await locker.using(key, { ttl: 20_000 }, async (outer) => {
        const sent: string[] = [];
        const answers: unknown[] = [];
        const redis = nodes.clients[2]!;
        const send = redis.sendCommand.bind(redis);
        redis.sendCommand = ((command, ...rest) => {
          sent.push(command.name);
          if (command.name.startsWith('eval'))
            command.promise.then(
              (answer) => answers.push(answer),
              () => {},
            );
          return send(command, ...rest);
        }) as typeof send;
        try {
          const inner = locker.acquire(key, { ttl: 20_000 });
          // Master 2 thaws with the re-entry queued behind the outer grant: it answers the
          // re-entry with the fence it drew for that grant, before the hold's fence reaches it.
          const queued = async () => sent.some((name) => name.startsWith('eval'));
          await waitFor('the re-entry to be sent to master 2', queued, { timeout: 5_000 });
          nodes.masters.servers[2]!.resume();
          const handle = await inner;
          // The scenario: master 2 re-entered with the fence of its late grant, above the hold's.
          const [reentered] = answers as [number, number, number][];
          expect(reentered?.[2]).toBe(2);
          expect(reentered?.[1]).toBeGreaterThan(outer.fence);
          expect([handle.holds, handle.fence]).toEqual([2, outer.fence]);
          await handle.release();
        } finally {
          redis.sendCommand = send;
        }
      });
    } finally {
      nodes.masters.servers[2]!.resume();
    }
    await locker.close();
  });

  it('gives the hold its fence on a master that granted it late with a counter ahead, and a re-entry reports it', async () => {
    const key = freshKey('late-fence');
    await aheadOnMaster2(key);
    const locker = createRedlock({ clients: nodes.clients, prefix: '', nodeTimeout: 200 });
    const fences = () =>
      Promise.all(nodes.clients.map(async (redis) => (await protocol.inspect(redis, key)).fence));
    // Master 2 answers the outer acquisition after masters 0 and 1 decided it: it draws its own fence.
    nodes.masters.servers[2]!.pause();
    try {
      await locker.using(key, { ttl: 20_000 }, async (outer) => {
        nodes.masters.servers[2]!.resume();
        await waitFor(
          "master 2 to hold the key with the hold's fence",
          async () => (await fences()).every((fence) => fence === outer.fence),
          { timeout: 5_000 },
        ).catch(async (error: unknown) => {
          throw new Error(`fences ${(await fences()).join(', ')} against ${outer.fence}`, { cause: error });
        });
        await locker.using(key, { ttl: 20_000 }, async (inner) => {
          expect([inner.holds, inner.fence]).toEqual([2, outer.fence]);
        });
      });
    } finally {
      nodes.masters.servers[2]!.resume();
    }
    expect(await locker.isLocked(key)).toBe(false);
    await locker.close();
  });
});
