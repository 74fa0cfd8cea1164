import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';

describeLockerContract('token protocol on a single server', async () => {
  const server = await startRedis();
  const redis = server.client();
  return lockerTarget({
    create: (overrides) => createLocker({ redis, ...overrides }),
    clients: [redis],
    stop: () => server.stop(),
  });
});
