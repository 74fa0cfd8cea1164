import { type ProxiedClient, proxiedClient, type RedisMasters, startMasters } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { driftOf, quorumOf } from '../../src/redlock/quorum.js';
import type { Locker } from '../../src/types.js';
import { freshKey, ownersOn } from './support.js';

// S4 with real latency: five masters, each behind a proxy that holds every request and every
// reply for a known time. The handle must count ttl − drift from before the first request went
// out, once: so right after the grant it has at most ttl − drift − (the time the quorum needed)
// left, and no master that granted keeps the key for less than the handle believes it holds.

/** Each master's one-way delay, in ms, applied to requests and to replies alike. */
const ONE_WAY = [0, 25, 50, 75, 100];
const ROUND_TRIPS = ONE_WAY.map((ms) => 2 * ms);
/**
 * No grant can come back sooner: the 3rd-fastest master's round trip (100 ms), since the proxy
 * never forwards a byte before its delay is up.
 */
const QUORUM_ROUND_TRIP = [...ROUND_TRIPS].sort((a, b) => a - b)[quorumOf(ONE_WAY.length) - 1]!;

/**
 * Every key's namespace: its fence counter, seeded once by the warm-up, is then only incremented,
 * so an attempt is one round on each master (a fresh namespace would add two more: see
 * `seededAcquire`).
 */
const PREFIX = 'lock:';

let masters: RedisMasters;
let direct: Redis[];
let proxied: ProxiedClient[];
let locker: Locker;

beforeAll(async () => {
  masters = await startMasters(ONE_WAY.length);
  direct = masters.clients();
  proxied = await Promise.all(masters.servers.map((server) => proxiedClient(server)));
  // Far above the slowest round trip (200 ms), so that every master's answer counts however
  // loaded the host; it stays below ttl 1 000's validity, so only ttl 100 is warned about.
  locker = createRedlock({ clients: proxied.map((each) => each.redis), nodeTimeout: 600, prefix: PREFIX });
  // Without delay: the masters' identity check, the scripts' loading and the fence counters'
  // seeding happen once here, not inside a measured attempt.
  await (await locker.acquire(freshKey('warm'), { ttl: 5_000, wait: 0 })).release();
  for (const [index, ms] of ONE_WAY.entries()) proxied[index]!.proxy.delay({ upstream: ms, downstream: ms });
});
afterAll(async () => {
  await locker?.close();
  await Promise.all((proxied ?? []).map((each) => each.close()));
  await masters?.stop();
});

describe('RedLock validity under real latency (5 masters, delays 0–100 ms each way)', () => {
  it.each([1_000, 10_000])(
    'with ttl %i the handle holds ttl − drift from before the first request, once, and no master keeps the key for less',
    async (ttl) => {
      const drift = driftOf(ttl, 0.01);
      const key = freshKey('latency');
      const before = performance.now();
      const lock = await locker.acquire(key, { ttl, wait: 0 });
      const remaining = lock.remaining();
      const after = performance.now();

      expect(after - before).toBeGreaterThanOrEqual(QUORUM_ROUND_TRIP);
      // Counted from after the replies, it would still have about ttl − drift left.
      expect(remaining).toBeLessThanOrEqual(ttl - drift - QUORUM_ROUND_TRIP);
      // The tolerance below the bound is what this call took beyond the quorum's round trip (the
      // slower masters it also waited for, the fence, this process's own work), measured on the
      // same monotonic clock: a handle counted from before the first request, once, loses no
      // more. Counting the elapsed time twice loses it again, at least another 100 ms.
      const tookBeyondQuorum = after - before - QUORUM_ROUND_TRIP;
      expect(remaining).toBeGreaterThanOrEqual(ttl - drift - QUORUM_ROUND_TRIP - tookBeyondQuorum);

      // Read straight from each master, not through its proxy.
      expect(await ownersOn(direct, PREFIX + key)).toEqual(ONE_WAY.map(() => lock.owner));
      const readAt = performance.now();
      const pttls = await Promise.all(direct.map((client) => client.pttl(`{${PREFIX}${key}}`)));
      // What the handle believes it still holds when the reads were sent: every master keeps it longer.
      const believed = lock.validUntil - readAt;
      for (const [index, pttl] of pttls.entries()) {
        expect(pttl, `master ${index} (${ROUND_TRIPS[index]} ms round trip)`).toBeGreaterThanOrEqual(
          believed,
        );
      }
      await lock.release();
    },
  );

  it('with ttl 100 nothing is left once the quorum answered: the grant is undone everywhere and reported as too late', async () => {
    const ttl = 100;
    const validity = ttl - driftOf(ttl, 0.01);
    expect(validity).toBeLessThanOrEqual(QUORUM_ROUND_TRIP);
    const key = freshKey('latency-too-short');
    const error = await locker.acquire(key, { ttl, wait: 0 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({ agreed: 5, refused: 0, failed: 0, timedOut: 0 });
    const late = /^Error: granted (\d+) ms in, past the validity of (\d+) ms$/.exec(
      String((error as QuorumError).cause),
    );
    expect(late?.slice(2)).toEqual([String(validity)]);
    expect(Number(late?.[1])).toBeGreaterThanOrEqual(QUORUM_ROUND_TRIP);
    // The undo was answered by every master before the call rejected.
    expect(await ownersOn(direct, PREFIX + key)).toEqual(ONE_WAY.map(() => null));
  });
});
