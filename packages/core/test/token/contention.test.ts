import { fileURLToPath } from 'node:url';
import { startCluster, startRedis, startSentinel } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { runContention } from '../support/contention.js';
import { checkHistory } from '../support/history.js';
import type { TokenTarget } from '../support/token-factory.js';

const factory = fileURLToPath(new URL('../support/token-factory.ts', import.meta.url));

/** `workers` processes × `iterations` acquisitions of one key on `target`, checked against a witness on its own server. */
async function contend(target: TokenTarget, workers: number, iterations: number) {
  await using witness = await startRedis();
  const intervals = await runContention({
    factory,
    config: target,
    key: 'contended',
    witnessUrl: witness.url,
    witnessKey: 'witness',
    workers,
    iterations,
  });
  expect(checkHistory(intervals)).toEqual({
    overlaps: 0,
    fenceRegressions: 0,
    intervals: workers * iterations,
  });
  expect(await witness.client().get('witness')).toBe(String(workers * iterations));
}

// Every release hands the lock to the next queued waiter, in whichever process it waits.
describe('token protocol under contention across processes', () => {
  it('one server, 8 processes x 200 acquisitions: no overlap, exact witness, strictly increasing fences', async () => {
    await using server = await startRedis();
    await contend({ url: server.url }, 8, 200);
  }, 120_000);

  it('a 3-master cluster, 4 processes x 100 acquisitions: the same', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    await contend({ cluster: cluster.startupNodes }, 4, 100);
  }, 120_000);

  it('Sentinel, 4 processes x 100 acquisitions: the same', async () => {
    await using sentinel = await startSentinel();
    await contend({ sentinel: sentinel.redisOptions }, 4, 100);
  }, 120_000);
});
