import {
  type AcquireOptions,
  createLocker,
  InvalidKeyError,
  InvalidOptionError,
  type Lock,
  type Locker,
  type LockerOptions,
  ReleaseListener,
} from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { callsBetween, commandCalls } from './support/stats.js';

/** Bad values as [value, how the error message shows it]. */
const BAD_TTLS: [unknown, string][] = [
  [0, '0'],
  [-1, '-1'],
  [1.5, '1.5'],
  [Number.NaN, 'NaN'],
  [Number.POSITIVE_INFINITY, 'Infinity'],
  [2 ** 31, '2147483648'],
  ['5', '"5"'],
  [null, 'null'],
];
const BAD_WAITS: [unknown, string][] = [
  [-1, '-1'],
  [1.5, '1.5'],
  [Number.NaN, 'NaN'],
  ['5', '"5"'],
  [null, 'null'],
];
const LONG_OWNER = 'o'.repeat(300);
/** Strings are shown cut to 80 characters. */
const LONG_OWNER_SHOWN = `"${'o'.repeat(80)}…"`;

/** Cases as [option path, options, the bad value the error must name, how its message shows it]. */
/** The option named, the options given, its value, how the message shows it (null: an unknown name, shown without its value). */
type Case = [string, Record<string, unknown>, unknown, string | null];

const CALL_CASES: Case[] = [
  ...BAD_TTLS.map(([ttl, shown]): Case => ['ttl', { ttl }, ttl, shown]),
  ...BAD_WAITS.map(([wait, shown]): Case => ['wait', { wait }, wait, shown]),
  ['retry.base', { retry: { base: -1 } }, -1, '-1'],
  ['retry.max', { retry: { max: -5 } }, -5, '-5'],
  ['retry.max', { retry: { base: 200, max: 100 } }, 100, '100'],
  ['retry.jitter', { retry: { jitter: 2 } }, 2, '2'],
  ['retry', { retry: null }, null, 'null'],
  // A list is no options object: read by its names, it would pass as none given.
  ['retry', { retry: [] }, [], '[]'],
  ['retry.backof', { retry: { backof: 5 } }, 5, null],
  ['owner', { owner: '' }, '', '""'],
  ['owner', { owner: LONG_OWNER }, LONG_OWNER, LONG_OWNER_SHOWN],
  // The token format's own fields start with NUL (last attempt, grant terms), SOH (release ids)
  // and STX (a waiter's inbox): beside the owners' in the lock hash and the waiter registrations.
  ['owner', { owner: '\u0000o' }, '\u0000o', '"\\u0000o"'],
  ['owner', { owner: '\u0001' }, '\u0001', '"\\u0001"'],
  ['owner', { owner: '\u0002abc' }, '\u0002abc', '"\\u0002abc"'],
  // Sent as U+FFFD, which another owner's name may hold: the two would re-enter each other's hold.
  ['owner', { owner: 'w\uD800' }, 'w\uD800', '"w\\ud800"'],
  ['renew', { renew: 'yes' }, 'yes', '"yes"'],
  ['signal', { signal: { aborted: false } }, { aborted: false }, '{"aborted":false}'],
  ['tll', { tll: 5_000 }, 5_000, null],
];

const LOCKER_CASES: Case[] = [
  ...BAD_TTLS.map(([ttl, shown]): Case => ['ttl', { ttl }, ttl, shown]),
  ...BAD_WAITS.map(([wait, shown]): Case => ['wait', { wait }, wait, shown]),
  ['retry.max', { retry: { base: 200, max: 100 } }, 100, '100'],
  ['retry.jitter', { retry: { jitter: 2 } }, 2, '2'],
  ['prefix', { prefix: 42 }, 42, '42'],
  ['prefix', { prefix: null }, null, 'null'],
  ['prefix', { prefix: ['lock:'] }, ['lock:'], '["lock:"]'],
  ['prefix', { prefix: 'lock\uDC00' }, 'lock\uDC00', '"lock\\udc00"'],
  ['id', { id: '' }, '', '""'],
  ['id', { id: LONG_OWNER }, LONG_OWNER, LONG_OWNER_SHOWN],
  ['id', { id: '\u0001svc' }, '\u0001svc', '"\\u0001svc"'],
  ['id', { id: '\u0002svc' }, '\u0002svc', '"\\u0002svc"'],
  ['clock', { clock: 5 }, 5, '5'],
  ['replication.replicas', { replication: { replicas: 0, timeout: 100 } }, 0, '0'],
  ['tll', { tll: 5_000 }, 5_000, null],
];

function expectNamed(error: unknown, option: string, value: unknown, shown: string | null): void {
  expect(error).toBeInstanceOf(InvalidOptionError);
  const invalid = error as InvalidOptionError;
  expect(invalid.code).toBe('ERR_LOCK_INVALID_OPTION');
  expect(invalid.option).toBe(option);
  // An unknown name's value is neither shown nor kept: it may be a secret given under a wrong name.
  expect(invalid.value).toStrictEqual(shown === null ? undefined : value);
  const head =
    shown === null
      ? `unknown option "${option}" (expected `
      : `invalid option "${option}": ${shown} (expected `;
  expect(invalid.message).toContain(head);
}

describe('S26: bad parameters are refused by name before anything reaches Redis', () => {
  let server: RedisServer;
  let redis: Redis;
  let locker: Locker;
  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
    locker = createLocker({ redis });
    // One lock taken and released, so the scripts are loaded and a fence exists: from here on
    // every refused call must leave DBSIZE and the script counters exactly as they are.
    await (await locker.acquire('warm', { ttl: 1_000 })).release();
    return async () => {
      await locker.close();
      await server.stop();
    };
  });

  async function nothingWritten(attempt: () => Promise<unknown>): Promise<unknown> {
    const keys = await redis.dbsize();
    const before = await commandCalls(redis);
    const error = await attempt().then(
      async (accepted) => {
        // Give back whatever a wrongly accepted call took, so it cannot disturb other cases.
        if (accepted && typeof accepted === 'object') {
          if ('release' in accepted) await (accepted as Lock).release();
          if ('close' in accepted) await (accepted as Locker).close();
        }
        return new Error('the call was accepted');
      },
      (e: unknown) => e,
    );
    expect(await redis.dbsize()).toBe(keys);
    expect(callsBetween(before, await commandCalls(redis), ['evalsha', 'eval'])).toBe(0);
    return error;
  }

  it.each(CALL_CASES)('acquire refuses %s in %o', async (option, options, value, shown) => {
    expectNamed(
      await nothingWritten(() => locker.acquire(`bad:${option}`, options as AcquireOptions)),
      option,
      value,
      shown,
    );
  });

  it.each(CALL_CASES)(
    'using refuses %s in %o and never runs the callback',
    async (option, options, value, shown) => {
      let ran = false;
      const error = await nothingWritten(() =>
        locker.using(`bad-using:${option}`, options as AcquireOptions, () => {
          ran = true;
        }),
      );
      expectNamed(error, option, value, shown);
      expect(ran).toBe(false);
    },
  );

  it.each(LOCKER_CASES)('createLocker refuses %s in %o', async (option, options, value, shown) => {
    const error = await nothingWritten(async () => createLocker({ redis, ...options } as LockerOptions));
    expectNamed(error, option, value, shown);
  });

  it('tryAcquire refuses wait, which it does not take', async () => {
    const error = await nothingWritten(() => locker.tryAcquire('bad', { wait: 5 } as AcquireOptions));
    expectNamed(error, 'wait', 5, null);
  });

  it.each([
    ['', ''],
    ['5 000 bytes', 'k'.repeat(5_000)],
    ['a number', 42],
  ])('refuses the key %s with InvalidKeyError', async (_name, key) => {
    const error = await nothingWritten(() => locker.acquire(key as string));
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect((error as InvalidKeyError).key).toBe(key);
  });

  it.each([
    ['acquire', () => locker.acquire('bad', null as unknown as AcquireOptions)],
    ['tryAcquire', () => locker.tryAcquire('bad', null as unknown as AcquireOptions)],
    ['using', () => locker.using('bad', null as unknown as AcquireOptions, () => {})],
  ])('%s refuses null options with a typed error', async (_name, call) => {
    expectNamed(await nothingWritten(call), 'options', null, 'null');
  });
  it.each([
    ['acquire', () => locker.acquire('bad', [] as unknown as AcquireOptions)],
    ['tryAcquire', () => locker.tryAcquire('bad', [] as unknown as AcquireOptions)],
    ['using', () => locker.using('bad', [] as unknown as AcquireOptions, () => {})],
  ])('%s refuses a list given as options, which would pass as none', async (_name, call) => {
    expectNamed(await nothingWritten(call), 'options', [], '[]');
  });
  it.each([
    ['a Map', new Map([['ttl', 5]])],
    ['a Date', new Date(0)],
    ['a Set', new Set()],
  ])('refuses %s given as options, whose entries are no options', async (_name, options) => {
    const error = await nothingWritten(() => locker.acquire('bad', options as unknown as AcquireOptions));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error).toMatchObject({ option: 'options', value: options });
  });
  it('refuses a release listener linger that is not a positive integer number of ms, naming it', () => {
    for (const linger of [0, -1, 1.5, Number.NaN, 2 ** 31])
      expect(() => new ReleaseListener(redis, linger)).toThrow(/invalid option "linger"/);
    expect(() => new ReleaseListener(redis, 200)).not.toThrow();
  });
});
