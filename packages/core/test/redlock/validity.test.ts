import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { driftOf, nthLargest } from '../../src/redlock/quorum.js';
import { backendOver, freshKey, type Nodes, ownersOn, protocol, startNodes } from './support.js';

// S4: a lease is certainly held for ttl − drift counted from the attempt's start (the backend
// contract: the engine adds it to the time it sent the attempt), and granted only while
// ttl − elapsed − drift > 0: never a grant that has already ended, never time counted twice. A
// grant that came too late is undone and reported as such (QuorumError), not as a busy lock.
let nodes: Nodes;
beforeAll(async () => {
  nodes = await startNodes(3);
});
afterAll(async () => {
  await nodes.masters.stop();
});

/**
 * Where every master is up and the clock is the test's own: no master may count as timed out
 * because a loaded host left it unscheduled past the default 250 ms (it would change the vote).
 */
const nodeTimeout = 5_000;

/** A clock on which every attempt (a pair of readings: start, end) takes exactly `elapsed` ms. */
function clockWhereAttemptsTake(elapsed: number): () => number {
  let readings = 0;
  return () => {
    readings += 1;
    return readings % 2 === 1 ? 1_000 : 1_000 + elapsed;
  };
}

/**
 * Freezes masters `indexes` (SIGSTOP) for `ms` while `call` runs: every command sent to them
 * meanwhile is answered only after they thaw, so the call takes at least that long.
 */
async function withLatency<T>(indexes: number[], ms: number, call: () => Promise<T>): Promise<T> {
  const servers = indexes.map((index) => nodes.masters.servers[index]!);
  for (const server of servers) server.pause();
  const thaw = () => {
    for (const server of servers) if (server.running) server.resume();
  };
  const timer = setTimeout(thaw, ms);
  try {
    return await call();
  } finally {
    clearTimeout(timer);
    thaw();
  }
}

/** The latest moment a majority of masters certainly still holds `resource`, on this process's clock. */
async function majorityHeldUntil(clients: readonly Redis[], resource: string): Promise<number> {
  const readAt = performance.now();
  const pttls = await Promise.all(clients.map((client) => client.pttl(`{${resource}}`)));
  return readAt + (nthLargest(pttls, 2) ?? 0);
}

describe('RedLock validity accounting', () => {
  it.each([100, 1_000, 10_000])(
    'with ttl %i grants ttl − drift while ttl − elapsed − drift > 0, and from 0 undoes it and says it came too late',
    async (ttl) => {
      const drift = driftOf(ttl, 0.01);
      const resource = freshKey('validity');
      for (const elapsed of [0, ttl / 2, ttl - drift - 0.5]) {
        const backend = backendOver(nodes.clients, { clock: clockWhereAttemptsTake(elapsed), nodeTimeout });
        const grant = await backend.acquire(resource, 'me', ttl);
        expect(grant, `elapsed ${elapsed}`).toMatchObject({ acquired: true, validity: ttl - drift });
        if (grant.acquired) await backend.release(resource, 'me', grant.token);
      }
      for (const elapsed of [ttl - drift, ttl]) {
        const tooSlow = backendOver(nodes.clients, { clock: clockWhereAttemptsTake(elapsed), nodeTimeout });
        const error = await tooSlow.acquire(resource, 'me', ttl).catch((caught: unknown) => caught);
        expect(error, `elapsed ${elapsed}`).toBeInstanceOf(QuorumError);
        expect(error).toMatchObject({ agreed: 3, refused: 0, failed: 0, timedOut: 0 });
        expect(String((error as QuorumError).cause)).toBe(
          `Error: granted ${elapsed} ms in, past the validity of ${ttl - drift} ms`,
        );
        expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
      }
    },
  );

  it('counts the lease a majority keeps when masters report their own ttl (a re-entry that kept or cut it)', async () => {
    const leases = new Map<unknown, number>(
      nodes.clients.map((client, index) => [client, [1_000, 3_000, 2_000][index]!]),
    );
    const reporting = {
      ...protocol,
      async acquire(...args: Parameters<typeof protocol.acquire>) {
        const reply = await protocol.acquire(...args);
        return reply.acquired ? { ...reply, ttl: leases.get(args[0])! } : reply;
      },
    };
    const backend = backendOver(nodes.clients, { protocol: reporting, nodeTimeout });
    const resource = freshKey('validity-reported');
    const grant = await backend.acquire(resource, 'me', 10_000);
    // Two of three keep it for 2 s or more: the lock stands that long, not 10 s, nor only 1 s.
    expect(grant).toMatchObject({ acquired: true, validity: 2_000 - driftOf(2_000, 0.01) });
    if (grant.acquired) await backend.release(resource, 'me', grant.token);
  });

  it('undoes the grant on every node, and says it came too late, when a paused master makes the attempt outlast the ttl', async () => {
    // Above the validity (295 ms), so that the frozen master's timeout makes the attempt too
    // late; and with room for the two live masters' answers on a loaded host.
    const backend = backendOver(nodes.clients, { nodeTimeout: 1_000 });
    const resource = freshKey('validity-paused');
    const paused = nodes.masters.servers[2]!;
    paused.pause();
    try {
      const error = await backend.acquire(resource, 'me', 300).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(QuorumError);
      expect(error).toMatchObject({ agreed: 2, refused: 0, failed: 0, timedOut: 1 });
      expect(String((error as QuorumError).cause)).toContain('past the validity of 295 ms');
      expect(await ownersOn(nodes.clients.slice(0, 2), resource)).toEqual([null, null]);
    } finally {
      paused.resume();
    }
    // The paused node runs the queued acquire and then the queued release, in order: nothing stays.
    await nodes.clients[2]!.ping();
    expect(await ownersOn(nodes.clients, resource)).toEqual([null, null, null]);
    expect(backend.stats.releaseFailures).toBe(1);
  });
});

describe('RedLock handles under latency', () => {
  const ttl = 10_000;
  const validity = ttl - driftOf(ttl, 0.01);

  it('keep ttl − drift from the moment the attempt was sent, however long one master of the quorum took', async () => {
    const locker = createRedlock({ clients: nodes.clients, nodeTimeout: 5_000, prefix: '' });
    const key = freshKey('handle-slow-master');
    const before = performance.now();
    const lock = await withLatency([0], 300, () => locker.acquire(key, { ttl, wait: 0 }));
    const after = performance.now();
    expect(after - before).toBeGreaterThan(250);
    // Counting the 300 ms twice would leave the handle at most before + validity − 300.
    expect(lock.validUntil).toBeGreaterThanOrEqual(before + validity);
    expect(lock.validUntil).toBeLessThanOrEqual(after + validity);
    expect(await majorityHeldUntil(nodes.clients, key)).toBeGreaterThanOrEqual(lock.validUntil);
    await lock.release();
    await locker.close();
  });

  it('are granted when the attempt took more than half the lease, with the whole validity', async () => {
    const locker = createRedlock({ clients: nodes.clients, nodeTimeout: 5_000, prefix: '' });
    const key = freshKey('handle-half-lease');
    const lease = 3_000;
    const before = performance.now();
    // Two of three masters frozen: the majority cannot answer before they thaw, 1.7 s later.
    const lock = await withLatency([1, 2], 1_700, () => locker.tryAcquire(key, { ttl: lease }));
    expect(performance.now() - before).toBeGreaterThan(1_600);
    expect(lock).not.toBeNull();
    expect(lock!.validUntil).toBeGreaterThanOrEqual(before + lease - driftOf(lease, 0.01));
    expect(await majorityHeldUntil(nodes.clients, key)).toBeGreaterThanOrEqual(lock!.validUntil);
    await lock!.release();
    await locker.close();
  });

  it('keep ttl − drift from the moment an extension was sent', async () => {
    const locker = createRedlock({ clients: nodes.clients, nodeTimeout: 5_000, prefix: '' });
    const key = freshKey('handle-extend');
    const lock = await locker.acquire(key, { ttl, wait: 0 });
    const before = performance.now();
    await withLatency([2], 300, () => lock.extend());
    expect(performance.now() - before).toBeGreaterThan(250);
    expect(lock.validUntil).toBeGreaterThanOrEqual(before + validity);
    expect(await majorityHeldUntil(nodes.clients, key)).toBeGreaterThanOrEqual(lock.validUntil);
    await lock.release();
    await locker.close();
  });
});

describe('RedLock handles after an extension that failed', () => {
  it('are bounded by the lease it asked for less the RedLock drift, since it may have landed', async () => {
    const driftFactor = 0.3;
    const locker = createRedlock({ clients: nodes.clients, nodeTimeout: 100, driftFactor, prefix: '' });
    const lock = await locker.acquire(freshKey('failed-extend'), { ttl: 20_000, wait: 0 });
    const lease = 2_000;
    const before = performance.now();
    const failed = await withLatency([1, 2], 1_000, () =>
      lock.extend(lease).catch((error: unknown) => error),
    );
    expect(failed).toBeInstanceOf(QuorumError);
    // Counted from the send, a moment after `before` (300 ms allowed for a loaded host's stalls);
    // the engine's own 1 % would leave it valid 580 ms past what driftFactor 0.3 allows (1 978 ms).
    expect(lock.validUntil - before).toBeLessThan(lease - driftOf(lease, driftFactor) + 300);
    await lock.release();
    await locker.close();
  });
});
