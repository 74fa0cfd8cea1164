import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import { backendOver, freshKey, type Nodes, ownersOn, protocol, startNodes } from './support.js';

// Masters that fail or time out, as opposed to refusing, are reported as a typed QuorumError.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/** Runs `fn` with masters `indexes` frozen (SIGSTOP), then thaws them and drains what they queued. */
async function withPaused<T>(indexes: number[], fn: () => Promise<T>): Promise<T> {
  const servers = indexes.map((index) => nodes.masters.servers[index]!);
  for (const server of servers) server.pause();
  try {
    return await fn();
  } finally {
    for (const server of servers) server.resume();
    await Promise.all(indexes.map((index) => nodes.clients[index]!.ping()));
  }
}

/**
 * Blocks this process's event loop for at least `minMs`, and until `key` exists on every server
 * on `ports` (asked over raw RESP by a child process run synchronously, up to 10 s): a stall
 * that ends with every answer already sent, however slowly a loaded host runs the servers.
 */
function blockUntilKeyOnEvery(ports: readonly number[], key: string, minMs: number): void {
  const child = `
    const net = require('node:net');
    const [ports, key, until] = JSON.parse(process.argv[1]);
    const exists = (port) => new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => resolve(false));
      socket.once('data', (data) => { socket.destroy(); resolve(data.toString().startsWith(':1')); });
      socket.write(['*2', '$6', 'EXISTS', '$' + Buffer.byteLength(key), key, ''].join(String.fromCharCode(13, 10)));
    });
    (async () => {
      while (Date.now() < until || !(await Promise.all(ports.map(exists))).every(Boolean)) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
  `;
  const result = spawnSync(
    process.execPath,
    ['-e', child, JSON.stringify([ports, key, Date.now() + minMs])],
    {
      timeout: 10_000,
    },
  );
  if (result.status !== 0) throw new Error(`the stall's child failed: ${result.stderr}`);
}

/**
 * The node timeout of the calls below, whose frozen masters it ends: long enough that the masters
 * left running always answer within it on a loaded host, even on a backend's first call (its
 * master checks and script loads included), which is not what these tests are about; at 200 ms a
 * busy host's first call timed out on the running master too ('0 agreed, 3 timed out').
 */
const NODE_TIMEOUT = 1_000;

const caught = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );

describe('RedLock QuorumError', () => {
  it('names needed, agreed and timed-out masters when a majority does not answer, and leaves no token', async () => {
    const backend = backendOver(nodes.clients, { nodeTimeout: NODE_TIMEOUT });
    const resource = freshKey('quorum-down');
    const error = await withPaused([1, 2], () => caught(backend.acquire(resource, 'me', 5_000)));
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({
      code: 'ERR_LOCK_QUORUM',
      needed: 2,
      agreed: 1,
      refused: 0,
      failed: 0,
      timedOut: 2,
    });
    expect((error as Error).message).toContain('1 agreed, 0 refused, 0 failed, 2 timed out');
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
  });

  it('counts a master whose script fails as failed', async () => {
    const backend = backendOver(nodes.clients, { nodeTimeout: NODE_TIMEOUT });
    const resource = freshKey('quorum-wrongtype');
    // A string where the format keeps a hash: the acquire script errors on two masters.
    for (const client of nodes.clients.slice(0, 2)) await client.set(`{${resource}}`, 'x', 'PX', 10_000);
    const error = await caught(backend.acquire(resource, 'me', 5_000));
    expect(error).toMatchObject({ needed: 2, agreed: 1, refused: 0, failed: 2, timedOut: 0 });
    expect(await ownersOn(nodes.clients.slice(2), resource)).toEqual([null]);
  });

  it('refuses (so the engine waits) when the masters that answered could have formed a majority', async () => {
    const backend = backendOver(nodes.clients, { nodeTimeout: NODE_TIMEOUT });
    const resource = freshKey('quorum-split');
    await protocol.acquire(nodes.clients[1]!, resource, 'other', 5_000);
    const reply = await withPaused([2], () => backend.acquire(resource, 'me', 5_000));
    expect(reply.acquired).toBe(false);
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, 'other', null]);
  });

  it('does not count a master as timed out because this process was stalled while its answer arrived', async () => {
    const resource = freshKey('quorum-stall');
    // The warm-up (scripts loaded, fences drawn) is given time: only the stalled call has 20 ms, and a
    // busy host can take that long for any round trip, which is not what this test is about.
    const patient = backendOver(nodes.clients, { nodeTimeout: 1_000 });
    const warm = await patient.acquire(resource, 'me', 5_000);
    if (!warm.acquired) throw new Error(`the warm-up was refused: ${JSON.stringify(warm)}`);
    await patient.release(resource, 'me', warm.token);
    const backend = backendOver(nodes.clients, { nodeTimeout: 20 });
    // The commands are written before acquire() returns; then the event loop is blocked past the
    // timeout, until every master has run its script (and so written its answer): when the loop
    // resumes, the answers are waiting and the timers are already due.
    const pending = backend.acquire(resource, 'me', 5_000);
    blockUntilKeyOnEvery(
      nodes.masters.servers.map((server) => server.port),
      `{${resource}}`,
      150,
    );
    expect(await pending).toMatchObject({ acquired: true });
  });

  it('throws on release and inspect when too few masters answer to tell', async () => {
    const backend = backendOver(nodes.clients, { nodeTimeout: NODE_TIMEOUT });
    const resource = freshKey('quorum-release');
    const grant = await backend.acquire(resource, 'me', 5_000);
    if (!grant.acquired) throw new Error('refused');
    const [release, inspect] = await withPaused([0, 1], () =>
      Promise.all([caught(backend.release(resource, 'me', grant.token)), caught(backend.inspect(resource))]),
    );
    expect(release).toMatchObject({ needed: 2, timedOut: 2 });
    expect(inspect).toMatchObject({ needed: 2, timedOut: 2 });
    // The queued releases ran once the masters thawed.
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
  });
});
