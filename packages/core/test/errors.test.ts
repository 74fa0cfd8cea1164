import {
  AcquireTimeoutError,
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
    ];
    const codes: LockErrorCode[] = errors.map((error) => error.code);
    expect(new Set(codes)).toEqual(new Set(LOCK_ERROR_CODES));
    expect([busy, quorum, unavailable]).toEqual(['ERR_LOCK_BUSY', 'ERR_LOCK_QUORUM', 'ERR_LOCK_UNAVAILABLE']);
    expect(new QuorumError('k', 2, 1, 0, 2, 0)).toBeInstanceOf(LockUnavailableError);
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
});
