import { fencedGet, fencedSet, InvalidOptionError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';

it('writes with a fence at or above the stored one, refuses an older one, and reads both back', async () => {
  await using server = await startRedis();
  const redis = server.client();
  expect(await fencedSet(redis, 'account', 9, 'a')).toBe(true);
  expect(await fencedSet(redis, 'account', 10, 'b')).toBe(true);
  // Compared as numbers: "9" sorts after "10" as text.
  expect(await fencedSet(redis, 'account', 9, 'late')).toBe(false);
  expect(await fencedSet(redis, 'account', 10, 'again')).toBe(true);
  expect(await fencedGet(redis, 'account')).toEqual({ value: 'again', fence: 10 });
});

it('refuses a key or value ioredis would send as something else, before anything is written', async () => {
  await using server = await startRedis();
  const redis = server.client();
  const secret = 'balance=100';
  const refusals: [unknown, unknown, RegExp][] = [
    ['', 'v', /^invalid option "key": "" \(expected a non-empty string\)$/],
    [undefined, 'v', /^invalid option "key": undefined \(expected a non-empty string\)$/],
    [['res', '99'], 'v', /^invalid option "key": .*\(expected a non-empty string\)$/],
    ['acct:\uD800', 'v', /^invalid key: holds a lone UTF-16 surrogate/],
    ['k', undefined, /^invalid value: undefined \(expected a string\)$/],
    ['k', null, /^invalid value: null \(expected a string\)$/],
    ['k', { secret }, /^invalid value: object \(expected a string\)$/],
    ['k', `${secret}\uD800`, /^invalid value: holds a lone UTF-16 surrogate/],
  ];
  for (const [key, value, message] of refusals) {
    const error = await fencedSet(redis, key as string, 1, value as string).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect((error as Error).message).toMatch(message);
    // A value is data: its content is neither shown nor kept.
    expect(JSON.stringify(error)).not.toContain(secret);
    expect((error as Error).message).not.toContain(secret);
  }
  await expect(fencedGet(redis, undefined as unknown as string)).rejects.toBeInstanceOf(InvalidOptionError);
  expect(await redis.dbsize()).toBe(0);
});
