import { types } from 'node:util';
import {
  AcquireTimeoutError,
  ClockSkewError,
  createLocker,
  InvalidKeyError,
  InvalidOptionError,
  LOCK_ERROR_CODES,
  LockAbortError,
  LockBusyError,
  type LockErrorCode,
  LockerClosedError,
  LockLostError,
  LockUnavailableError,
  NotOwnerError,
  QuorumError,
  ReplicationError,
  UnsafeServerError,
} from '@lock/core';
import { describe, expect, it } from 'vitest';
import { callerKeyed } from '../src/errors.js';

describe('errors', () => {
  it('carry literal codes, all listed in LOCK_ERROR_CODES', () => {
    const busy: 'ERR_LOCK_BUSY' = new LockBusyError('k', 5).code;
    const quorum: 'ERR_LOCK_QUORUM' = new QuorumError('k', 2, 1, 0, 2, 0).code;
    const unavailable: 'ERR_LOCK_UNAVAILABLE' | 'ERR_LOCK_QUORUM' = new LockUnavailableError('k', 'acquire')
      .code;
    const errors = [
      new LockBusyError('k', 5),
      new AcquireTimeoutError('k', 10, 2, 5),
      new LockAbortError('k', 'gone'),
      new LockLostError('k', 'expired'),
      new LockUnavailableError('k', 'acquire'),
      new QuorumError('k', 2, 1, 0, 2, 0),
      new NotOwnerError('k', 'o'),
      new ReplicationError('k', 1, 0),
      new InvalidOptionError('ttl', 0, 'a positive integer'),
      new InvalidKeyError('', 'empty'),
      new LockerClosedError(),
      new UnsafeServerError('k', 'maxmemory-policy is "allkeys-lru"'),
      new ClockSkewError('k', '127.0.0.1:6379 (run_id 0f3c9a1e)', 3_000, 1_000),
    ];
    const codes: LockErrorCode[] = errors.map((error) => error.code);
    expect(new Set(codes)).toEqual(new Set(LOCK_ERROR_CODES));
    expect([busy, quorum, unavailable]).toEqual(['ERR_LOCK_BUSY', 'ERR_LOCK_QUORUM', 'ERR_LOCK_UNAVAILABLE']);
    expect(new QuorumError('k', 2, 1, 0, 2, 0)).toBeInstanceOf(LockUnavailableError);
  });

  it('say how long a busy lock has left, or that Redis could not say', () => {
    expect(new LockBusyError('k', 812).message).toBe('lock "k" is held by another owner (812 ms left)');
    expect(new LockBusyError('k', -1).message).toBe('lock "k" is held by another owner (time left unknown)');
  });

  it('names the class of a wrong client and says node-redis is not supported yet', () => {
    class RedisClient {
      isOpen = false;
    }
    const error = (() => {
      try {
        createLocker({ redis: new RedisClient() as never });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error?.message).toContain('an instance of RedisClient');
    expect(error?.message).toContain('node-redis clients are not supported yet');
  });

  it('shows a bad plain value briefly, naming the class instances in it instead of spelling them out', () => {
    class Locker {
      ownerPrefix = 'secret-owner-prefix:';
    }
    const error = new InvalidOptionError(
      'ttl',
      { locker: new Locker(), key: 'order:{params.id}' },
      'a number',
    );
    expect(error.message).toBe(
      'invalid option "ttl": {"locker":"[Locker]","key":"order:{params.id}"} (expected a number)',
    );
    const long = new InvalidOptionError(
      'wait',
      { list: Array.from({ length: 100 }, (_, i) => i) },
      'a number',
    );
    expect(long.message).not.toContain('99');
    expect(long.message).toContain('…');
  });

  it("renames a backend's error to the caller key, keeping its class, fields, cause and stack", () => {
    const call = { key: 'order:$&', resource: 'lock:order:$&' };
    const late = new Error('granted 900 ms in, past the validity of 850 ms');
    const quorum = new QuorumError(call.resource, 2, 3, 0, 0, 0, { cause: late });
    const error = callerKeyed(quorum, call) as QuorumError;
    expect(error).toBeInstanceOf(QuorumError);
    expect(error).toMatchObject({
      key: 'order:$&',
      needed: 2,
      agreed: 3,
      refused: 0,
      failed: 0,
      timedOut: 0,
    });
    expect(error).toMatchObject({
      code: 'ERR_LOCK_QUORUM',
      name: 'QuorumError',
      operation: 'reach a quorum for',
    });
    expect(error.cause).toBe(late);
    expect(error.message).toBe('lock "order:$&" needs 2 masters: 3 agreed, 0 refused, 0 failed, 0 timed out');
    expect(error.stack).toBe(quorum.stack!.replace(quorum.message, () => error.message));
    expect(types.isNativeError(error)).toBe(true);
    // The original is left as it was: it may be shared (a `close()` release answering two calls).
    expect(quorum.key).toBe(call.resource);
    expect('cause' in (callerKeyed(new ReplicationError(call.resource, 1, 0), call) as Error)).toBe(false);
    // A secret stays out of sight.
    const notOwner = callerKeyed(new NotOwnerError(call.resource, 'secret'), call) as NotOwnerError;
    expect(notOwner.owner).toBe('secret');
    expect(Object.keys(notOwner)).not.toContain('owner');
  });

  it('leaves alone what does not name the resource, and what is no LockError', () => {
    const call = { key: 'k', resource: 'lock:k' };
    const mine = new LockBusyError('k', 5);
    const plain = Object.assign(new Error('x'), { key: call.resource });
    expect(callerKeyed(mine, call)).toBe(mine);
    expect(callerKeyed(plain, call)).toBe(plain);
    expect(callerKeyed('lock:k', call)).toBe('lock:k');
  });

  it('refuses an unknown option by name, without its value', () => {
    expect(InvalidOptionError.unknown('tll', 'one of the acquire options: ttl, wait', 'ttl').message).toBe(
      'unknown option "tll" (expected one of the acquire options: ttl, wait). Did you mean "ttl"?',
    );
    const hidden = InvalidOptionError.unknown('client', 'one of the locker options: redis', undefined);
    expect(hidden.message).toBe('unknown option "client" (expected one of the locker options: redis)');
    expect(hidden).toMatchObject({ code: 'ERR_LOCK_INVALID_OPTION', option: 'client', value: undefined });
  });
});
