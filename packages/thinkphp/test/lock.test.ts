import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidKeyError, InvalidOptionError, LockBusyError } from '@lock/core';
import { refusalHiding } from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import { describe, expect, it, vi } from 'vitest';
import { serverSeconds, useRedis } from '../../core/test/legacy/fixture.js';
import { php, phpAvailable } from './php.js';

// Recorded, not replaced: the pauses between tries are real, and their lengths are checked.
vi.mock('node:timers/promises', async (importOriginal) => {
  const timers = await importOriginal<typeof import('node:timers/promises')>();
  return { ...timers, setTimeout: vi.fn(timers.setTimeout) };
});

const t = useRedis();

describe('Lock (default mode)', () => {
  it('has the PHP constants, overridable per subclass and per instance', async () => {
    expect([Lock.LOCK_EXPIRE, Lock.LOCK_RETRY_MAX, Lock.LOCK_SLEEP]).toEqual([3, 3, 0.3]);
    class LongLock extends Lock {
      static override LOCK_EXPIRE = 60;
    }
    expect(new LongLock('k', { redis: t.redis }).LOCK_EXPIRE).toBe(60);
    expect(await LongLock.wrap('k', (lock) => lock.LOCK_EXPIRE, { redis: t.redis })).toBe(60);
    expect(await t.redis.ttl('k')).toBe(-2);
    const lock = new Lock('k', { redis: t.redis, retryMax: 5 });
    lock.LOCK_SLEEP = 0.1;
    expect([lock.LOCK_EXPIRE, lock.LOCK_RETRY_MAX, lock.LOCK_SLEEP]).toEqual([3, 5, 0.1]);
  });

  it('locks once: a second Lock object on the key is refused until the first unlocks', async () => {
    const first = new Lock('k', { redis: t.redis });
    const second = new Lock('k', { redis: t.redis, retryMax: 1 });
    expect(await first.lock()).toBe(true);
    expect(first.handle?.fence).toBe(1);
    expect(await second.lock()).toBe(false);
    await first.unlock();
    expect(first.handle).toBeNull();
    expect(await second.lock()).toBe(true);
    expect(second.handle?.fence).toBe(2);
    await second.unlock();
  });

  it('wrap() runs the callback under the lock, always unlocks, and never masks its error', async () => {
    expect(await Lock.wrap('k', async () => t.redis.exists('k'), { redis: t.redis })).toBe(1);
    expect(await t.redis.exists('k')).toBe(0);
    const failure = new Error('the user error');
    await expect(Lock.wrap('k', () => Promise.reject(failure), { redis: t.redis })).rejects.toBe(failure);
    expect(await t.redis.exists('k')).toBe(0);
    const holder = new Lock('k', { redis: t.redis });
    await holder.lock();
    await expect(Lock.wrap('k', () => 1, { redis: t.redis, retryMax: 1 })).rejects.toThrow(LockBusyError);
    await holder.unlock();
  });

  it('wrap() refuses a callback that is no function before it locks, naming it', async () => {
    for (const strict of [false, true]) {
      const error = await Lock.wrap('k', 'not a fn' as never, { redis: t.redis, strict }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option: 'fn', value: 'not a fn' });
      expect(await t.redis.dbsize()).toBe(0);
    }
  });

  it("wrap() refused reports the holder's ms left, as the attempt's reply gave it", async () => {
    const refusal = async (strict: boolean, time?: () => number) => {
      const error = await Lock.wrap('k', () => 1, { redis: t.redis, retryMax: 1, strict, time }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LockBusyError);
      expect((error as Error).message).toBe(
        `lock "k" is held by another owner (${(error as LockBusyError).remaining} ms left)`,
      );
      return (error as LockBusyError).remaining;
    };
    const holder = new Lock('k', { redis: t.redis, expire: 5 });
    expect(await holder.lock()).toBe(true);
    for (const strict of [false, true]) {
      const remaining = await refusal(strict);
      // Read before the PTTL, from a TTL of expire + 1 = 6 s.
      expect(remaining).toBeGreaterThanOrEqual(await t.redis.pttl('k'));
      expect(remaining).toBeLessThanOrEqual(6_000);
    }
    await holder.unlock();
    // A key without a TTL (a PHP process killed between SETNX and EXPIRE): until it may be taken
    // over, skewMargin (2 s) past its value by default, at the value by strict mode's time().
    const now = await serverSeconds(t.redis);
    await t.redis.set('k', String(now + 10));
    const byDefault = await refusal(false);
    expect(byDefault).toBeGreaterThan(10_000);
    expect(byDefault).toBeLessThanOrEqual(12_000);
    expect(await refusal(true, () => now)).toBe(10_000);
    // A value centuries ahead answers the longest wait, not an overflowed reply.
    await t.redis.set('k', '9999999999');
    expect(await refusal(false)).toBe(2 ** 31 - 1);
    expect(await refusal(true, () => now)).toBe(2 ** 31 - 1);
  });

  it.runIf(phpAvailable)("wrap() refused by a PHP holder reports the PHP lock's ms left", async () => {
    const held = await php('lock', { port: t.server.port, key: 'lock_goods:302', expire: 3 });
    expect(held.acquired).toBe(true);
    for (const strict of [false, true]) {
      const error = await Lock.wrap('lock_goods:302', () => 1, { redis: t.redis, retryMax: 1, strict }).catch(
        (e: unknown) => e,
      );
      const after = await t.redis.pttl('lock_goods:302');
      expect(error).toBeInstanceOf(LockBusyError);
      // Strict mode counts the value as PHP does, in the caller's whole seconds: when its second
      // has ticked since PHP's, that is up to a second short of the TTL.
      expect((error as LockBusyError).remaining).toBeGreaterThanOrEqual(strict ? after - 1_000 : after);
      expect((error as LockBusyError).remaining).toBeLessThanOrEqual(4_000);
    }
  });

  it('reports a lock of another format under the name as InvalidKeyError', async () => {
    await t.redis.hset('k', 'uuid:1', '1');
    await expect(new Lock('k', { redis: t.redis }).lock()).rejects.toThrow(InvalidKeyError);
    await expect(new Lock('k', { redis: t.redis, strict: true }).lock()).rejects.toThrow(
      /another Redis type/,
    );
    expect(await t.redis.hgetall('k')).toEqual({ 'uuid:1': '1' });
  });

  it('refuses bad options before any write, naming the value', async () => {
    // Named as the caller wrote it: the option here, the constant below.
    for (const [options, option, value] of [
      [{ expire: 2.5 }, 'expire', 2.5],
      [{ expire: 0 }, 'expire', 0],
      [{ retryMax: 0 }, 'retryMax', 0],
      [{ sleep: -1 }, 'sleep', -1],
    ] as const) {
      const error = (() => {
        try {
          return new Lock('k', { redis: t.redis, ...options });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option, value });
      expect((error as Error).message).toMatch(new RegExp(`^invalid option "${option}": ${value} \\(`));
      expect((error as Error).message).not.toMatch(/LOCK_/);
    }
    // A pause past what a Node timer takes would be cut to nothing: the retries would not wait.
    expect(() => new Lock('k', { redis: t.redis, sleep: 3e6 })).toThrow(
      /"sleep": 3000000 \(expected a number of seconds from 0 to 2147483\)/,
    );
    class HalfSecondLock extends Lock {
      static override LOCK_EXPIRE = 2.5;
    }
    expect(() => new HalfSecondLock('k', { redis: t.redis })).toThrow(
      /^invalid option "LOCK_EXPIRE": 2\.5 \(/,
    );
    expect(() => new HalfSecondLock('k', { redis: t.redis, expire: 3 })).not.toThrow();
    const retried = new Lock('k', { redis: t.redis, retryMax: 2 });
    retried.LOCK_RETRY_MAX = 0;
    await expect(retried.lock()).rejects.toMatchObject({ option: 'LOCK_RETRY_MAX', value: 0 });
    expect(() => new Lock('k', { redis: t.redis, tll: 1 } as never)).toThrow(/"tll"/);
    // Names from the PHP class, Redisson or redlock are refused with the option to use instead.
    for (const [name, instead] of [
      ['LOCK_EXPIRE', '; expire is in whole seconds). Did you mean "expire"?'],
      ['ttl', '; expire is in whole seconds). Did you mean "expire"?'],
      ['timeout', '; expire is in whole seconds). Did you mean "expire"?'],
      ['LOCK_RETRY_MAX', '). Did you mean "retryMax"?'],
      ['retryCount', '). Did you mean "retryMax"?'],
      ['LOCK_SLEEP', '; sleep is in seconds). Did you mean "sleep"?'],
      ['retryDelay', '; sleep is in seconds). Did you mean "sleep"?'],
      ['wait', '; a wait is retryMax attempts, sleep seconds apart)'],
    ] as const) {
      const error = (() => {
        try {
          return new Lock('k', { redis: t.redis, [name]: 5 } as never);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option: name, value: undefined });
      expect((error as Error).message).toMatch(
        new RegExp(`^unknown option "${name}" \\(expected one of the Lock options: `),
      );
      expect((error as Error).message.endsWith(instead)).toBe(true);
    }
    const secret = 'hunter2-not-to-be-logged';
    for (const [name, message] of [
      [
        'expre',
        /^unknown option "expre" \(expected one of the Lock options: redis, env, expire, .*\)\. Did you mean "expire"\?$/,
      ],
      ['LOCK_EXPIRE', /Did you mean "expire"\?$/],
      ['password', /^unknown option "password" \(expected one of the Lock options: [^)]*\)$/],
    ] as const) {
      const refused = await refusalHiding(
        secret,
        () => new Lock('k', { redis: t.redis, [name]: secret } as never),
      );
      expect(refused).toMatchObject({ option: name, value: undefined });
      expect(refused.message).toMatch(message);
    }
    expect(() => new Lock('k', { redis: t.redis, strict: 'false' } as never)).toThrow(/"strict": "false"/);
    expect(() => new Lock('k', { redis: t.redis, time: 5 } as never)).toThrow(/"time": 5/);
    expect(() => new Lock('k', { redis: t.redis, commandTimeout: 0 })).toThrow(/"commandTimeout": 0/);
    expect(() => new Lock('k', { redis: {} as never })).toThrow(/"redis"/);
    expect(() => new Lock('k', { env: { REDIS_HOST: 'x' } as never })).toThrow(/"env"/);
    expect(() => new Lock('k', { redis: t.redis, skewMargin: -5 })).toThrow(/"skewMargin": -5/);
    // A clock option of the other mode is never read: refused, not believed in.
    for (const option of [
      { skewMargin: -5 },
      { peerClockAhead: 'abc' },
      { skewMargin: 1_500, peerClockAhead: 0 },
    ])
      expect(() => new Lock('k', { redis: t.redis, strict: true, ...option } as never)).toThrow(
        /"(skewMargin|peerClockAhead)".*strict mode/,
      );
    expect(() => new Lock('k', { redis: t.redis, time: () => 1_800_000_000 })).toThrow(
      /"time".*outside strict mode/,
    );
    expect(() => new Lock('k', {})).toThrow(InvalidOptionError);
    const lock = new Lock('k', { redis: t.redis, strict: true });
    lock.LOCK_EXPIRE = -1;
    await expect(lock.lock()).rejects.toThrow(InvalidOptionError);
    expect(await t.redis.dbsize()).toBe(0);
  });

  it('refuses null for a numeric option, naming it, rather than taking the default', async () => {
    // `expire: null` from a config file may mean "no expiry": locking for the default 3 s instead
    // is a guess, and `strict`, `time` and `commandTimeout` already refuse null.
    const refusals = ['expire', 'retryMax', 'sleep', 'skewMargin', 'peerClockAhead'].map((option) => {
      try {
        new Lock('k', { redis: t.redis, [option]: null });
        return { option, constructed: true };
      } catch (error) {
        return {
          option,
          refused: error instanceof InvalidOptionError,
          value: (error as InvalidOptionError).value,
        };
      }
    });
    expect(refusals).toEqual(
      ['expire', 'retryMax', 'sleep', 'skewMargin', 'peerClockAhead'].map((option) => ({
        option,
        refused: true,
        value: null,
      })),
    );
    expect(await t.redis.dbsize()).toBe(0);
  });
});

describe('Lock peerClockAhead', () => {
  it('refuses a bad value by name before any write, also once a Lock with a good one shares its locker', async () => {
    for (const peerClockAhead of [2_000, undefined]) {
      expect(await new Lock('k', { redis: t.redis, peerClockAhead }).lock()).toBe(true);
      await t.redis.flushall();
    }
    // '2000' would name the locker made for 2000, were it not checked first.
    for (const bad of [-1, 1.5, Number.NaN, '2000', 2 ** 31]) {
      const error = (() => {
        try {
          return new Lock('k', { redis: t.redis, peerClockAhead: bad as never });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error).toMatchObject({ option: 'peerClockAhead', value: bad });
    }
    expect(() => new Lock('k', { redis: t.redis, skewMargin: 'x' as never })).toThrow(/"skewMargin": "x"/);
    expect(await t.redis.dbsize()).toBe(0);
  });
});

describe('Lock input checks in both modes', () => {
  it('refuses an empty or non-string key in the constructor, naming it, before any write', async () => {
    for (const strict of [false, true]) {
      for (const key of ['', undefined, 42, 'k'.repeat(4097)]) {
        expect(() => new Lock(key as never, { redis: t.redis, strict })).toThrow(InvalidKeyError);
      }
      expect(() => new Lock('', { redis: t.redis, strict })).toThrow(/invalid lock key "": .*empty/);
      expect(() => new Lock(42 as never, { redis: t.redis, strict })).toThrow(/invalid lock key 42/);
      let ran = false;
      await expect(
        Lock.wrap(
          '',
          () => {
            ran = true;
          },
          { redis: t.redis, strict },
        ),
      ).rejects.toThrow(InvalidKeyError);
      expect(ran).toBe(false);
    }
    expect(await t.redis.dbsize()).toBe(0);
  });
});

describe('Lock (strict: true) reproduces the PHP class, unsafe parts included', () => {
  it('under the ACL the README gives strict mode (no PTTL), a busy lock is still refused, not an error', async () => {
    // The README's list, plus what ioredis itself sends (its ready check, and SCRIPT for EVALSHA).
    await t.redis.acl(
      'SETUSER',
      'strict',
      'on',
      'nopass',
      '~*',
      '+setnx',
      '+getset',
      '+expire',
      '+get',
      '+del',
      '+eval',
      '+evalsha',
      '+info',
      '+script',
    );
    const user = t.server.client({ username: 'strict', password: '' });
    try {
      expect(await new Lock('k', { redis: t.redis, strict: true }).lock()).toBe(true);
      const seconds = (await t.redis.get('k'))!;
      const error = await Lock.wrap('k', () => 1, { redis: user, retryMax: 1, strict: true }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(LockBusyError);
      // Without PTTL: the ms until the caller's time() reaches the stored value.
      expect((error as LockBusyError).remaining).toBeLessThanOrEqual(
        (Number(seconds) - Math.floor(Date.now() / 1000) + 1) * 1000,
      );
      expect((error as LockBusyError).remaining).toBeGreaterThan(0);
    } finally {
      user.disconnect();
      await t.redis.acl('DELUSER', 'strict');
    }
  });

  it('unlock() of a live lock is a no-op, exactly as in PHP (B3)', async () => {
    const lock = new Lock('k', { redis: t.redis, strict: true });
    expect(await lock.lock()).toBe(true);
    const value = await t.redis.get('k');
    await lock.unlock();
    expect(await t.redis.get('k')).toBe(value);
  });

  it('unlock() from a clock 20 s ahead deletes a lock it never held (B4)', async () => {
    expect(await new Lock('k', { redis: t.redis }).lock()).toBe(true);
    const ahead = new Lock('k', {
      redis: t.redis,
      strict: true,
      time: () => Math.floor(Date.now() / 1000) + 20,
    });
    await ahead.unlock();
    expect(await t.redis.exists('k')).toBe(0);
  });

  it('makes three back-to-back tries, since sleep(0.3) sleeps 0 s (B7)', async () => {
    expect(await new Lock('k', { redis: t.redis }).lock()).toBe(true);
    const monitor = await t.server.client().monitor();
    const evals: string[] = [];
    monitor.on('monitor', (_time, args: string[]) => {
      if (args[0]?.toLowerCase().startsWith('eval')) evals.push(args[0]);
    });
    vi.mocked(sleep).mockClear();
    expect(await new Lock('k', { redis: t.redis, strict: true }).lock()).toBe(false);
    await expect.poll(() => evals.length).toBe(3);
    expect(vi.mocked(sleep).mock.calls.map(([ms]) => ms)).toEqual([0, 0]);
    monitor.disconnect();
  });

  it.runIf(phpAvailable)(
    'refuses a time() not in whole Unix seconds before any script: a live PHP lock stays, a free key stays free',
    async () => {
      const held = await php('lock', { port: t.server.port, key: 'php', expire: 10 });
      expect(held.acquired).toBe(true);
      // Fixed answers, so that the error can be checked to name the exact value.
      const ms = Date.now();
      const seconds = Math.floor(ms / 1000);
      for (const bad of [ms, ms / 1000, undefined, Number.NaN, String(seconds), seconds - 1e9 + 1]) {
        for (const key of ['php', 'free']) {
          const lock = new Lock(key, { redis: t.redis, strict: true, time: () => bad as number });
          const refused = { name: 'InvalidOptionError', option: 'time', value: bad };
          await expect(lock.lock()).rejects.toMatchObject(refused);
          await expect(lock.unlock()).rejects.toMatchObject(refused);
          await expect(
            Lock.wrap(key, () => 1, { redis: t.redis, strict: true, time: () => bad as number }),
          ).rejects.toThrow(InvalidOptionError);
        }
      }
      expect(await t.redis.get('php')).toBe(held.value);
      expect(await t.redis.exists('free')).toBe(0);
      // PHP still holds: its own next attempt is refused, as with any live holder.
      expect((await php('lock', { port: t.server.port, key: 'php', expire: 10 })).acquired).toBe(false);
    },
  );

  it('takes over a stale TTL-less key writing now + 2·expire + 2 with TTL expire + 1 (B1)', async () => {
    const now = await serverSeconds(t.redis);
    await t.redis.set('k', String(now - 10));
    const lock = new Lock('k', { redis: t.redis, strict: true, time: () => now });
    expect(await lock.lock()).toBe(true);
    expect(await t.redis.get('k')).toBe(String(now + 8));
    expect(Math.ceil((await t.redis.pttl('k')) / 1000)).toBe(4);
  });
});
