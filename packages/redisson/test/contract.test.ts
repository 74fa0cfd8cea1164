import { createLocker, type LockProtocol, type RedisClient } from '@lock/core';
import { startRedis, startSentinel } from '@lock/testing';
import { describeLockerContract } from '../../core/test/contract/contract.js';
import { lockerTarget } from '../../core/test/contract/target.js';
import { FairLockProtocol, RLockProtocol, WriteLockProtocol } from '../src/index.js';

/**
 * The lock kinds the core engine runs as exclusive lockers. Every locker gets its own protocol
 * object, as separate processes would: holders, counts and fences must all be read back from
 * Redis. Redisson's fence counter is the only key allowed to outlive its lock.
 *
 * The fenced lock is not among them: two cases of the contract ('re-enters inside a using()
 * critical section…' and 're-enters only when nested…') require a re-entry to keep its fence,
 * while Redisson's RFencedLock draws a new token on every acquisition (README.md line 526, lock kinds table:
 * "`RFencedLock` … the token grows on re-entry too"), and the contract has no way to leave a
 * case out for one target. Its other cases are the RLock's: the fenced lock is an RLock with
 * another acquire script (src/fenced/protocol.ts).
 */
const kinds: readonly { name: string; protocol: () => LockProtocol }[] = [
  { name: 'getLock (RLock protocol)', protocol: () => new RLockProtocol() },
  { name: 'getFairLock (FairLockProtocol)', protocol: () => new FairLockProtocol() },
  { name: 'getReadWriteLock().writeLock() (WriteLockProtocol)', protocol: () => new WriteLockProtocol() },
];

function kindTarget(protocol: () => LockProtocol, redis: RedisClient, stop: () => Promise<void>) {
  return lockerTarget({
    create: (overrides) => createLocker({ redis, protocol: protocol(), prefix: '', ...overrides }),
    clients: [redis],
    stop,
    counters: /^redisson_lock_token:\{/,
  });
}

for (const kind of kinds) {
  describeLockerContract(`@lock/redisson ${kind.name} on a single server`, async () => {
    const server = await startRedis();
    return kindTarget(kind.protocol, server.client(), () => server.stop());
  });

  describeLockerContract(`@lock/redisson ${kind.name} behind sentinels, WAIT gating on`, async () => {
    const sentinel = await startSentinel({ replicas: 1, sentinels: 3 });
    return kindTarget(kind.protocol, sentinel.client(), () => sentinel.stop());
  });
}
