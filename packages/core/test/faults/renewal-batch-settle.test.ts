import { legacyProtocol, singleBackend } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

/** One more than the locks one renewal script call takes: two batches. */
const LOCKS = 501;

it('answers the batches of a renewal that Redis served, when another batch of it failed', async () => {
  await using server = await startRedis();
  const admin = server.client();
  await admin.call('ACL', 'SETUSER', 'renewer', 'on', '>renewer-pw', '~*', '&*', '+@all');
  const backend = singleBackend(
    server.client({ username: 'renewer', password: 'renewer-pw' }),
    legacyProtocol(),
    { replication: false, eviction: 'ignore' },
  );
  const items = await Promise.all(
    Array.from({ length: LOCKS }, async (_, i) => {
      const resource = `r${i}`;
      const owner = `owner-${i}`;
      const grant = await backend.acquire(resource, owner, 10_000);
      if (!grant.acquired) throw new Error(`${resource} was not acquired`);
      return { resource, owner, token: grant.token };
    }),
  );
  // The keys of r0 (in the first batch) are no longer the user's: Redis refuses that batch's
  // script call (NOPERM) before running it, and serves the second batch's.
  await admin.call('ACL', 'SETUSER', 'renewer', 'resetkeys', '~r[1-9]*', '~{r[1-9]*');
  const results = await backend.extendMany(items, 10_000);
  const failed = results.slice(0, LOCKS - 1);
  expect(failed.every((result) => result instanceof Error && result.message.startsWith('NOPERM'))).toBe(true);
  expect(results[LOCKS - 1]).toMatchObject({ token: expect.any(String), validity: expect.any(Number) });
  await admin.call('ACL', 'SETUSER', 'renewer', '~*');
  await backend.close();
});
