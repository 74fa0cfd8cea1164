import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcquireTimeoutError, LockUnavailableError, QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { freshKey, type Nodes, ownersOn, protocol, startNodes } from './support.js';

// A lost vote is "busy" (tryAcquire answers null, acquire waits) when another owner holds so
// much that no majority is possible, and "unreachable" (QuorumError, a LockUnavailableError)
// only when too few masters answered for anyone to tell.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(5);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/** Masters of one case: `free` free, `taken` held by another owner, `down` frozen (SIGSTOP). */
interface Split {
  readonly free: number;
  readonly taken: number;
  readonly down: number;
}

/**
 * Sets up `split` over the first free + taken + down masters, runs `call` with a locker over
 * them while the down ones are frozen, then thaws them and checks that nothing of ours stayed.
 */
async function withSplit<T>(
  split: Split,
  call: (locker: ReturnType<typeof createRedlock>, key: string) => Promise<T>,
): Promise<T> {
  const count = split.free + split.taken + split.down;
  const clients = nodes.clients.slice(0, count);
  const key = freshKey(`split-${split.free}-${split.taken}-${split.down}`);
  const takenAt = clients.slice(split.free, split.free + split.taken);
  for (const client of takenAt) await protocol.acquire(client, key, 'another', 10_000);
  const frozen = nodes.masters.servers.slice(split.free + split.taken, count);
  const locker = createRedlock({ clients, nodeTimeout: 200, prefix: '' });
  for (const server of frozen) server.pause();
  try {
    return await call(locker, key);
  } finally {
    for (const server of frozen) server.resume();
    await Promise.all(clients.map((client) => client.ping()));
    const owners = await ownersOn(clients, key);
    expect(owners.filter((owner) => owner !== null && owner !== 'another')).toEqual([]);
    await locker.close();
    await Promise.all(clients.map((client) => client.del(`{${key}}`)));
  }
}

const caught = (promise: Promise<unknown>) =>
  promise.then(
    (value) => value,
    (error: unknown) => error,
  );

describe('RedLock: busy or unreachable', () => {
  it.each<[string, Split]>([
    ['5 masters: 2 free, 2 taken, 1 down', { free: 2, taken: 2, down: 1 }],
    ['5 masters: 1 free, 2 taken, 2 down', { free: 1, taken: 2, down: 2 }],
    ['5 masters: 3 taken, 2 down', { free: 0, taken: 3, down: 2 }],
    ['4 masters: 2 taken, 2 down (the refusals alone rule out a majority)', { free: 0, taken: 2, down: 2 }],
    ['3 masters: 1 free, 1 taken, 1 down', { free: 1, taken: 1, down: 1 }],
  ])('%s: busy, so tryAcquire answers null', async (_, split) => {
    expect(
      await withSplit(split, (locker, key) => caught(locker.tryAcquire(key, { ttl: 5_000 }))),
    ).toBeNull();
  });

  it.each<[string, Split]>([
    ['5 masters: 2 taken, 3 down', { free: 0, taken: 2, down: 3 }],
    ['5 masters: 2 free, 3 down', { free: 2, taken: 0, down: 3 }],
    ['3 masters: 1 taken, 2 down', { free: 0, taken: 1, down: 2 }],
  ])('%s: unreachable, so tryAcquire throws QuorumError', async (_, split) => {
    const error = await withSplit(split, (locker, key) => caught(locker.tryAcquire(key, { ttl: 5_000 })));
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toBeInstanceOf(LockUnavailableError);
    expect(error).toMatchObject({ code: 'ERR_LOCK_QUORUM', timedOut: split.down, refused: split.taken });
  });

  it('waits out a busy split with some masters down and times out as contended, not unavailable', async () => {
    const error = await withSplit({ free: 0, taken: 2, down: 2 }, (locker, key) =>
      caught(locker.acquire(key, { ttl: 5_000, wait: 600 })),
    );
    expect(error).toBeInstanceOf(AcquireTimeoutError);
    expect((error as AcquireTimeoutError).attempts).toBeGreaterThan(1);
  });
});
