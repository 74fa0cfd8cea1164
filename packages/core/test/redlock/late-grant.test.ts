import { startProxy, type TcpProxy } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { backendOver, freshKey, type Nodes, ownersOn, startNodes } from './support.js';

// D7: a majority that grants only after the validity ended is undone, and reported as what it
// is: masters too slow for the ttl (QuorumError, its cause saying so), not a busy lock, which
// would send tryAcquire to null and a waiting acquire to AcquireTimeoutError on a free lock.
let nodes: Nodes;
/** Masters 1 and 2 reached through these proxies; master 0 directly. */
let proxies: TcpProxy[];
let clients: Redis[];
beforeAll(async () => {
  nodes = await startNodes(3);
  proxies = await Promise.all(nodes.masters.servers.slice(1).map((server) => startProxy({ target: server })));
  clients = [nodes.clients[0]!, ...proxies.map((proxy) => new Redis(proxy.redisOptions))];
});
afterAll(async () => {
  for (const client of clients.slice(1)) client.disconnect();
  await Promise.all(proxies.map((proxy) => proxy.stop()));
  await nodes.masters.stop();
});

// The first call of a backend compares the masters' run_ids and the first acquisition of a
// namespace seeds its fence counters: round trips that would make the slow masters time out.
// Done once at full speed, so that only the attempt under test meets the delay.
async function warm(acquire: () => Promise<{ release(): Promise<unknown> } | null>): Promise<void> {
  const held = await acquire();
  await held!.release();
}

// ttl 250 leaves a validity of 250 − ⌊2.5⌋ − 2 = 246 ms; the majority needs master 1 or 2, whose
// round trip is 400 ms. nodeTimeout is above that, so they answer rather than time out.
const ttl = 250;
const nodeTimeout = 1_000;

/** Runs `fn` with masters 1 and 2 answering 200 ms late each way. */
async function withSlowMajority<T>(fn: () => Promise<T>): Promise<T> {
  for (const proxy of proxies) proxy.delay(200);
  try {
    return await fn();
  } finally {
    for (const proxy of proxies) proxy.pass();
  }
}

const caught = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => error,
  );

describe('RedLock grant past its validity', () => {
  it('the backend throws QuorumError saying the grant came back too late, after undoing it everywhere', async () => {
    const backend = backendOver(clients, { nodeTimeout });
    const resource = freshKey('late-grant');
    await warm(async () => {
      const grant = await backend.acquire(resource, 'me', ttl);
      return grant.acquired ? { release: () => backend.release(resource, 'me', grant.token) } : null;
    });
    const error = await withSlowMajority(() => caught(backend.acquire(resource, 'me', ttl)));
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({
      code: 'ERR_LOCK_QUORUM',
      needed: 2,
      agreed: 3,
      refused: 0,
      failed: 0,
      timedOut: 0,
    });
    expect(String((error as QuorumError).cause)).toMatch(
      /^Error: granted \d+ ms in, past the validity of 246 ms$/,
    );
    // Read directly, not through the proxies: the undo had reached every master before the error.
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
    await backend.close();
  });

  it('tryAcquire rejects with the QuorumError instead of answering busy, and leaves the lock free', async () => {
    const locker = createRedlock({ clients, nodeTimeout, prefix: '' });
    const key = freshKey('late-try');
    await warm(() => locker.tryAcquire(key, { ttl }));
    const error = await withSlowMajority(() => caught(locker.tryAcquire(key, { ttl })));
    expect(error).toBeInstanceOf(QuorumError);
    expect(String((error as QuorumError).cause)).toContain('past the validity of 246 ms');
    expect(await ownersOn(nodes.clients, key)).toEqual([null, null, null]);
    // Free indeed: with the masters fast again the same ttl is granted.
    const lock = await locker.tryAcquire(key, { ttl });
    expect(lock).not.toBeNull();
    await lock!.release();
    await locker.close();
  });

  it('a waiting acquire retries within its wait and rejects with the QuorumError, not AcquireTimeoutError', async () => {
    const locker = createRedlock({ clients, nodeTimeout, prefix: '' });
    const key = freshKey('late-wait');
    await warm(() => locker.tryAcquire(key, { ttl }));
    const error = await withSlowMajority(() => caught(locker.acquire(key, { ttl, wait: 1_500 })));
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({ code: 'ERR_LOCK_QUORUM', key, agreed: 3 });
    expect(String((error as QuorumError).cause)).toContain('past the validity of 246 ms');
    expect(await ownersOn(nodes.clients, key)).toEqual([null, null, null]);
    await locker.close();
  });
});
