import { afterAll, beforeAll, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { freshKey, type Nodes, startNodes } from './support.js';

let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  for (const server of nodes.masters.servers) server.resume();
  await nodes.masters.stop();
});

it('answers QuorumError, not free, when the silent masters may complete a majority holding the lock', async () => {
  const holder = createRedlock({ clients: nodes.clients, nodeTimeout: 200, prefix: '' });
  const readers = nodes.clients.map((client) => client.duplicate());
  for (const client of readers) client.on('error', () => {});
  const reader = createRedlock({
    clients: readers,
    nodeTimeout: 200,
    prefix: '',
  });
  const key = freshKey('inspect-undecided');
  const lock = await holder.acquire(key, { ttl: 30_000 });
  // Master 0 lost the key (a restart without persistence); master 2, which holds it, is paused.
  await nodes.clients[0]!.del(`{${key}}`);
  expect(await nodes.clients[1]!.exists(`{${key}}`)).toBe(1);
  nodes.masters.servers[2]!.pause();
  try {
    await expect(reader.isLocked(key)).rejects.toBeInstanceOf(QuorumError);
    await expect(reader.inspect(key)).rejects.toMatchObject({
      name: 'QuorumError',
      cause: {
        message:
          'it is held on 1 of the 2 masters that answered: the silent masters decide whether a majority holds it',
      },
    });
    expect(await reader.tryAcquire(key, { ttl: 5_000 })).toBeNull();
  } finally {
    nodes.masters.servers[2]!.resume();
  }
  expect(await reader.isLocked(key)).toBe(true);
  expect(await lock.release()).toBe('released');
  expect(await reader.isLocked(key)).toBe(false);
  await holder.close();
  await reader.close();
  for (const client of readers) client.disconnect();
});
