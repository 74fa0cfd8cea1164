import { fileURLToPath } from 'node:url';
import { startMasters, startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { runContention } from '../support/contention.js';
import { checkHistory } from '../support/history.js';

// The core contention checker, run over RedLock: separate processes, one witness counter.
describe('RedLock under multi-process contention', () => {
  it('has no overlapping holders, strictly increasing fences and an exact witness', async () => {
    await using masters = await startMasters(3);
    await using witness = await startRedis();
    const workers = 4;
    const iterations = 25;
    const intervals = await runContention({
      factory: fileURLToPath(new URL('./redlock-factory.ts', import.meta.url)),
      config: { urls: masters.urls },
      key: 'contended',
      witnessUrl: witness.url,
      witnessKey: 'witness',
      workers,
      iterations,
    });
    const verdict = checkHistory(intervals);
    expect(verdict).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: workers * iterations });
    expect(Number(await witness.client().get('witness'))).toBe(workers * iterations);
  });
});
