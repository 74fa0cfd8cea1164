import { legacyProtocol } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

it('in seconds, a resent release of an earlier owner never frees a later owner that wrote the same value', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const protocol = legacyProtocol({ unit: 's' });
  // Two owners acquiring within one second write the same timestamp: find such a pair.
  let pair: { key: string; first: string; second: string } | undefined;
  for (let i = 0; i < 20 && !pair; i++) {
    const a = await protocol.acquire(redis, `same:${i}`, 'owner-a', 3_000);
    if (!a.acquired) throw new Error('the key was free');
    await protocol.release(redis, `same:${i}`, 'owner-a', a.token);
    const b = await protocol.acquire(redis, `same:${i}`, 'owner-b', 3_000);
    if (!b.acquired) throw new Error('the key was free');
    if (a.token === b.token) pair = { key: `same:${i}`, first: a.token, second: b.token };
    else await protocol.release(redis, `same:${i}`, 'owner-b', b.token);
  }
  expect(pair).toBeDefined();
  const key = pair!.key;
  expect(await protocol.release(redis, key, 'owner-a', pair!.first)).toBe('not-owner');
  expect(await protocol.extend(redis, key, 'owner-a', pair!.first, 3_000)).toBeNull();
  expect(await protocol.inspect(redis, key)).toMatchObject({ held: true, owner: 'owner-b' });
  expect(await protocol.release(redis, key, 'owner-b', pair!.second)).toBe('released');
});
