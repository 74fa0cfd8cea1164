import { startMasters, waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { AcquireTimeoutError, QuorumError } from '../../src/errors.js';
import { createRedlock } from '../../src/redlock/index.js';
import { checkHistory, type Interval } from '../support/history.js';
import { ownersOn } from './support.js';

// S17: masters crash mid-contention. Clients do not queue commands for a dead master, so a
// crashed master answers at once with an error instead of costing every attempt the node timeout.
const clientOptions = { enableOfflineQueue: false, maxRetriesPerRequest: 0 };

describe('RedLock with crashed masters', () => {
  it('keeps ≥ 99% of acquisitions succeeding with no overlap when a minority crashes mid-run, then fails closed', async () => {
    await using masters = await startMasters(5);
    const clients = masters.clients(clientOptions);
    await waitFor('the clients to connect', async () => clients.every((client) => client.status === 'ready'));
    const contenders = 6;
    const rounds = 30;
    const killAfter = 50;
    const lockers = Array.from({ length: contenders }, () => createRedlock({ clients, nodeTimeout: 200 }));
    const intervals: Interval[] = [];
    let done = 0;
    let failures = 0;
    const errors = new Set<string>();
    let killing: Promise<unknown> | undefined;
    let killedAt = 0n;

    await Promise.all(
      lockers.map(async (locker, worker) => {
        for (let round = 0; round < rounds; round++) {
          try {
            const lock = await locker.acquire('crash', { ttl: 2_000, wait: 10_000 });
            const start = process.hrtime.bigint();
            await new Promise((resolve) => setImmediate(resolve));
            lock.assertHeld();
            const end = process.hrtime.bigint();
            intervals.push({ worker, start, end, fence: lock.fence });
            await lock.release();
          } catch (error) {
            failures++;
            errors.add(String(error));
          }
          done++;
          if (done === killAfter) {
            killing = Promise.all([masters.servers[0]!.kill(), masters.servers[3]!.kill()]).then(() => {
              killedAt = process.hrtime.bigint();
            });
          }
        }
      }),
    );
    await killing;

    const verdict = checkHistory(intervals);
    expect(killing).toBeDefined();
    // Most of the run happened with two masters dead.
    expect(intervals.filter((interval) => interval.start > killedAt).length).toBeGreaterThan(
      contenders * rounds - 2 * killAfter,
    );
    expect(verdict.overlaps).toBe(0);
    expect(verdict.fenceRegressions).toBe(0);
    expect(failures / (contenders * rounds), [...errors].join('; ')).toBeLessThanOrEqual(0.01);
    expect(intervals.length).toBe(contenders * rounds - failures);

    // A third crash leaves 2 of 5: no majority is possible, so acquisition fails closed: at once
    // for a single try, and after retrying for the whole wait for a waiting acquire.
    await masters.servers[4]!.kill();
    const once = await lockers[0]!
      .acquire('crash', { ttl: 2_000, wait: 0 })
      .catch((caught: unknown) => caught);
    expect(once).toBeInstanceOf(QuorumError);
    expect(once).toMatchObject({ needed: 3, agreed: 2, refused: 0, failed: 3, timedOut: 0 });
    const waited = await lockers[0]!
      .acquire('crash', { ttl: 2_000, wait: 1_000 })
      .catch((caught: unknown) => caught);
    expect(waited).toBeInstanceOf(AcquireTimeoutError);
    expect((waited as AcquireTimeoutError).attempts).toBeGreaterThan(1);
    expect((waited as Error).cause).toMatchObject({ needed: 3, agreed: 2, failed: 3 });
    expect(await ownersOn(clients.slice(1, 3), 'lock:crash')).toEqual([null, null]);
    await Promise.all(lockers.map((locker) => locker.close()));
  });
});
