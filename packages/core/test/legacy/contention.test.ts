import { fileURLToPath } from 'node:url';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runContention } from '../support/contention.js';
import { checkHistory } from '../support/history.js';

let server: RedisServer;

beforeAll(async () => {
  server = await startRedis();
});
afterAll(() => server.stop());

it('legacy locks in 4 processes (4×25) never overlap, fences strictly increase, every hold counted', async () => {
  const plan = {
    factory: fileURLToPath(new URL('./legacy-factory.ts', import.meta.url)),
    config: { url: server.url },
    key: 'contended',
    witnessUrl: server.url,
    witnessKey: 'witness',
    workers: 4,
    iterations: 25,
  };
  const intervals = await runContention(plan);
  const verdict = checkHistory(intervals);
  expect(verdict).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: 100 });
  const redis = server.client();
  expect(await redis.get('witness')).toBe('100');
  // Every lock key carries a TTL; only the fence counter and its epoch stamp may lack one.
  const keys = (await redis.keys('lock:*')).filter((key) => !/:fences(:epoch)?$/.test(key));
  for (const key of keys) expect(await redis.pttl(key)).not.toBe(-1);
});
