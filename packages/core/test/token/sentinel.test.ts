import { createLocker } from '@lock/core';
import { startSentinel } from '@lock/testing';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';

describeLockerContract('token protocol behind sentinels (WAIT gating on by default)', async () => {
  const sentinel = await startSentinel({ replicas: 1, sentinels: 3 });
  const redis = sentinel.client();
  return lockerTarget({
    create: (overrides) => createLocker({ redis, ...overrides }),
    clients: [redis],
    stop: () => sentinel.stop(),
  });
});
