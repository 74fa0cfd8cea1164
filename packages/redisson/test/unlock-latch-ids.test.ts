import { startRedis } from '@lock/testing';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

// Every process's release counter starts at 1, so only the random part of an id keeps two
// processes' unlock latches apart. Here both processes draw UUIDs sharing their first 32 bits,
// which was all of that part.
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  const randomUUID = () => `deadbeef${real.randomUUID().slice(8)}`;
  return { ...real, default: { ...real, randomUUID }, randomUUID };
});

/** The package and @lock/core loaded afresh, as a second Node process would load them. */
async function freshProcess() {
  vi.resetModules();
  return import('../src/index.js');
}

let server: Awaited<ReturnType<typeof startRedis>>;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(() => server.stop());

it("a second process's first unlock frees the lock, never answered by the first process's latch", async () => {
  const admin = server.client();
  const a = (await freshProcess()).createRedisson({ redis: server.client() });
  const b = (await freshProcess()).createRedisson({ redis: server.client() });
  for (const redisson of [a, b]) {
    await redisson.run(async () => {
      await redisson.getLock('orders:42').lock();
      await redisson.getLock('orders:42').unlock();
    });
    expect(await admin.exists('orders:42')).toBe(0);
  }
  // One latch per unlock, each named by its own id.
  expect(await admin.keys('redisson_unlock_latch:*')).toHaveLength(2);
  await Promise.all([a.shutdown(), b.shutdown()]);
});
