import { fileURLToPath } from 'node:url';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runContention } from '../support/contention.js';
import { checkHistory } from '../support/history.js';

/** Every key on the server and its PTTL, flattened: read in one script, so at one instant. */
const SNAPSHOT = `local out = {}
for _, key in ipairs(redis.call('keys', '*')) do
  out[#out + 1] = key
  out[#out + 1] = redis.call('pttl', key)
end
return out`;

/** The keys that may (and do) outlive the run: the shared fence counter, its epoch stamp, the witness. */
const UNEXPIRING = ['{lock:#}:fences', '{lock:#}:fences:epoch', 'witness'];

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
  const redis = server.client();
  // Sampled while the workers run: every key with its PTTL, read in one script (an atomic
  // snapshot), every few ms.
  const samples: [key: string, pttl: number][] = [];
  let running = true;
  const run = runContention(plan).finally(() => {
    running = false;
  });
  const sampling = (async () => {
    while (running) {
      const flat = (await redis.eval(SNAPSHOT, 0)) as (string | number)[];
      for (let i = 0; i < flat.length; i += 2) samples.push([flat[i] as string, flat[i + 1] as number]);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  const intervals = await run;
  await sampling;
  const verdict = checkHistory(intervals);
  expect(verdict).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: 100 });
  expect(await redis.get('witness')).toBe('100');
  // Every key a lock writes carries a TTL while it exists; only the fence counter and its epoch
  // stamp (and the test's witness) may lack one. The sample did catch locks held: the lock key
  // and its owner record.
  const lockKeys = samples.filter(([key]) => !UNEXPIRING.includes(key));
  expect(new Set(lockKeys.filter(([, pttl]) => pttl === -1).map(([key]) => key))).toEqual(new Set());
  expect(new Set(lockKeys.map(([key]) => key))).toEqual(
    new Set(['lock:contended', '{lock:contended}:owner']),
  );
  // Afterwards nothing is left but those.
  expect((await redis.keys('*')).sort()).toEqual([...UNEXPIRING].sort());
});
