import { fileURLToPath } from 'node:url';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runContention } from '../support/contention.js';
import { checkHistory } from '../support/history.js';

describe('token protocol under contention', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('8 processes x 200 acquisitions: no overlap, exact witness, strictly increasing fences', async () => {
    const intervals = await runContention({
      factory: fileURLToPath(new URL('../support/token-factory.ts', import.meta.url)),
      config: { url: server.url },
      key: 'contended',
      witnessUrl: server.url,
      witnessKey: 'witness',
      workers: 8,
      iterations: 200,
    });
    expect(checkHistory(intervals)).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: 1600 });
    expect(await server.client().get('witness')).toBe('1600');
  }, 120_000);
});
