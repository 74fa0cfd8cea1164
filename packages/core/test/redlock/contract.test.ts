import { createRedlock } from '@lock/core';
import { startMasters } from '@lock/testing';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';

describeLockerContract('RedLock (token protocol) over 3 masters', async () => {
  const masters = await startMasters(3);
  const clients = masters.clients();
  return lockerTarget({
    create: (overrides) => createRedlock({ clients, ...overrides }),
    clients,
    stop: () => masters.stop(),
  });
});
