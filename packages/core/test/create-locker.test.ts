import { inspect } from 'node:util';
import { createLocker, InvalidOptionError, legacyProtocol } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, chai, describe, expect, it, vi } from 'vitest';

describe('createLocker', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
  });
  afterAll(() => server.stop());

  it("names protocols by string: 'token' (the default) and 'legacy'", async () => {
    const token = createLocker({ redis });
    const legacy = createLocker({ redis, protocol: 'legacy', prefix: '' });
    expect((await token.inspect('named')).protocol).toBe('token');
    const lock = await legacy.acquire('legacy:named', { ttl: 5_000 });
    expect(Number(await redis.get('legacy:named'))).toBeGreaterThan(Date.now());
    expect((await legacy.inspect('legacy:named')).protocol).toBe('legacy');
    await lock.release();
    await token.close();
    await legacy.close();
  });

  it('refuses a bad client, protocol or option before touching Redis', async () => {
    const keys = await redis.dbsize();
    expect(() => createLocker({ redis: {} as never })).toThrow(InvalidOptionError);
    // The client itself, not in `redis`: said so, and the client (its password) kept off the error.
    const refused = (() => {
      try {
        createLocker(redis as never);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toMatchObject({
      name: 'InvalidOptionError',
      value: undefined,
      message:
        'invalid options: an ioredis client (createLocker takes options: pass it as createLocker({ redis }))',
    });
    expect(() => createLocker({ redis, protocol: 'redlock' as never })).toThrow(
      /invalid option "protocol": "redlock"/,
    );
    expect(() => createLocker({ redis, ttl: 0 })).toThrow(/invalid option "ttl": 0/);
    // A lease shorter than a round trip may take would come back expired from every grant.
    expect(() => createLocker({ redis, ttl: 9 })).toThrow(
      /invalid option "ttl": 9 \(expected an integer number of ms from 10 to/,
    );
    expect(() => createLocker({ redis, retry: { base: 100, max: 10 } })).toThrow(/retry.max/);
    expect(() => createLocker({ redis, retry: { base: 2_000 } })).toThrow(
      'invalid option "retry.base": 2000 (expected at most retry.max (1000 when not given))',
    );
    // Named with its path, as a bad value of a known one is.
    expect(() => createLocker({ redis, retry: { bsae: 20 } } as never)).toThrow(
      'unknown option "retry.bsae" (expected one of the retry options: base, max, jitter, attempts). Did you mean "retry.base"?',
    );
    expect(() => createLocker({ redis, replication: { replicas: 0, timeout: 10 } })).toThrow(
      /replication.replicas/,
    );
    expect(() =>
      createLocker({ redis, replication: { replicas: 1, timeout: 10, timout: 5 } as never }),
    ).toThrow(
      'unknown option "replication.timout" (expected one of the replication options: replicas, timeout). Did you mean "replication.timeout"?',
    );
    expect(() => createLocker({ redis, replication: { replicas: 1, timeout: 2 ** 40 } })).toThrow(
      /invalid option "replication.timeout": 1099511627776/,
    );
    expect(() => createLocker({ redis, timeout: 5 } as never)).toThrow(/unknown option "timeout" \(expected/);
    expect(await redis.dbsize()).toBe(keys);
  });

  it("prints a locker and a handle by what they are: chai's printer never calls inspect(key) with a depth", async () => {
    const locker = createLocker({ redis, id: 'printed' });
    const handle = await locker.acquire('shown', { ttl: 5_000 });
    const inspected = vi.spyOn(locker, 'inspect');
    // chai prints an object with a method named `inspect` by calling it: a lock read with a number for key.
    const { truncateThreshold } = chai.config;
    chai.config.truncateThreshold = 0;
    let printed: string;
    try {
      printed = chai.util.inspect({ handle, locker });
    } finally {
      chai.config.truncateThreshold = truncateThreshold;
    }
    expect(inspected).not.toHaveBeenCalled();
    expect(printed).toMatch(
      /^{ handle: LockHandle { key: 'shown', owner: '[^']+', fence: \d+, holds: 1, released: false }, locker: Locker { id: 'printed', protocol: 'token', prefix: 'lock:' } }$/,
    );
    expect(inspect(handle, { breakLength: Number.POSITIVE_INFINITY })).toMatch(
      /^LockHandle { key: 'shown', owner: '[^']+', fence: \d+, holds: 1, released: false }$/,
    );
    expect(inspect(locker)).toBe("Locker { id: 'printed', protocol: 'token', prefix: 'lock:' }");
    await handle.release();
    expect(inspect(handle)).toContain('released: true');
    await locker.close();
  });

  it('names an unknown option and the one it likely stands for, without showing a client passed in it', () => {
    const error = (build: () => unknown) => {
      try {
        build();
      } catch (caught) {
        return caught as InvalidOptionError;
      }
      throw new Error('accepted');
    };
    // Kept nowhere a logger or an uncaught print would show it: a secret under a wrong name.
    const secret = 'hunter2-not-to-be-logged';
    const leaked = error(() => createLocker({ redis, passwrd: secret } as never));
    expect(JSON.stringify(leaked)).not.toContain(secret);
    expect(inspect(leaked)).not.toContain(secret);
    expect(leaked.value).toBeUndefined();
    const misnamed = error(() => createLocker({ client: redis } as never));
    expect(misnamed).toBeInstanceOf(InvalidOptionError);
    expect(misnamed).toMatchObject({ code: 'ERR_LOCK_INVALID_OPTION', option: 'client', value: undefined });
    expect(misnamed.message).toMatch(
      /^unknown option "client" \(expected one of the locker options: redis, /,
    );
    expect(misnamed.message).toMatch(/\. Did you mean "redis"\?$/);
    expect(misnamed.message).not.toMatch(/instance|EventEmitter|Redis\b/);
    expect(error(() => createLocker({ redis, prefx: 'app:' } as never)).message).toMatch(
      /^unknown option "prefx" \(expected one of the locker options: .*\)\. Did you mean "prefix"\?$/,
    );
    // Nothing close: no guess.
    expect(error(() => createLocker({ redis, colour: 'red' } as never)).message).toMatch(
      /^unknown option "colour" \(expected one of the locker options: [^)]*\)$/,
    );
  });

  it('tryAcquire takes an options object shared with acquire whose wait is left undefined, and refuses a wait given', async () => {
    const locker = createLocker({ redis, prefix: 'try-wait:' });
    const shared = { ttl: 5_000, wait: undefined };
    const lock = await locker.tryAcquire('k', shared);
    expect(lock?.key).toBe('k');
    await lock?.release();
    await expect(locker.tryAcquire('k', { wait: 0 } as never)).rejects.toThrow(
      /^unknown option "wait" \(expected one of the tryAcquire options: ttl, /,
    );
    await locker.close();
  });

  it('takes options left undefined in using, as in acquire and tryAcquire', async () => {
    const locker = createLocker({ redis, prefix: 'undefined-options:' });
    expect(await locker.using('k', undefined, async (lock) => lock.key)).toBe('k');
    // Options after the function would be ignored (a wait the caller gave never honoured): refused.
    let ran = false;
    const swapped = locker.using(
      'k',
      (() => {
        ran = true;
      }) as never,
      { wait: 100 } as never,
    );
    await expect(swapped).rejects.toThrow(
      'invalid options: a function, then something more (using takes the options before the function: using(key, options, fn))',
    );
    expect(ran).toBe(false);
    expect(await redis.exists('undefined-options:k', '{undefined-options:k}')).toBe(0);
    await (await locker.acquire('k', undefined)).release();
    await locker.close();
  });

  it('keeps apart the holds of two explicit owners on two keys however NUL falls in their names', async () => {
    const locker = createLocker({ redis, prefix: 'nul-owners:' });
    const first = await locker.acquire('x\u0000nul-owners:y', { owner: 'a', ttl: 10_000 });
    const second = await locker.acquire('y', { owner: 'a\u0000nul-owners:x', ttl: 10_000 });
    expect(first.signal.aborted).toBe(false);
    expect(await first.release()).toBe('released');
    expect(await second.release()).toBe('released');
    expect(await locker.isLocked('x\u0000nul-owners:y')).toBe(false);
    await locker.close();
  });

  it("checkOptions refuses what acquire would, the format's ttl rule included, and sends nothing", async () => {
    const seconds = createLocker({ redis, protocol: legacyProtocol({ unit: 's' }), prefix: '' });
    const calls = await commandCalls(redis);
    expect(() => seconds.checkOptions({ ttl: 1_500 })).toThrow(/invalid option "ttl": 1500/);
    expect(() => seconds.checkOptions({ ttl: 9 })).toThrow(/invalid option "ttl": 9/);
    expect(() => seconds.checkOptions({ wait: -1 })).toThrow(/invalid option "wait": -1/);
    expect(() => seconds.checkOptions({ retry: { base: 2_000 } })).toThrow(/retry.base/);
    expect(() => seconds.checkOptions({ owner: '' })).toThrow(/invalid option "owner"/);
    expect(() => seconds.checkOptions({ wiat: 5 } as never)).toThrow(
      /unknown option "wiat" .*Did you mean "wait"\?$/,
    );
    seconds.checkOptions({ ttl: 2_000, wait: 0, renew: true, reentrant: false });
    expect(await commandCalls(redis)).toBe(calls + 1);
    await expect(seconds.acquire('checked', { ttl: 1_500 })).rejects.toThrow(/invalid option "ttl": 1500/);
    await seconds.close();
  });
});

/** Commands the server has run so far, this INFO call included. */
async function commandCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
}
