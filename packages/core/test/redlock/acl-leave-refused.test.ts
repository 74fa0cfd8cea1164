import { createRedlock } from '@lock/core';
import { startMasters } from '@lock/testing';
import { expect, it } from 'vitest';
import { grantLocker, TOKEN_COMMANDS } from '../support/acl-user.js';
import { leaveRefusedWarnings } from '../support/leave-refused.js';

it('warns once when every master refuses the script by which a waiter that gives up leaves the queue', async () => {
  await using masters = await startMasters(3);
  const admins = masters.clients();
  // Without ZREM the lock is taken and waited for as usual; only leaving the queue is refused.
  await Promise.all(admins.map((admin) => grantLocker(admin, TOKEN_COMMANDS.replace(' zrem', ''))));
  const clients = masters.clients({ username: 'locker', password: 'secret' });
  for (const client of clients) client.on('error', () => {});
  const locker = createRedlock({ clients });
  const lock = await locker.acquire('order:1', { ttl: 5_000 });
  const warnings = await leaveRefusedWarnings(locker, 'order:1');
  expect(warnings).toHaveLength(1);
  expect(warnings[0]?.message).toMatch(
    /may not run the script by which a waiter that gives up leaves the queue/,
  );
  // Its release would hand the lock on to a registration still queued, which needs ZREM too.
  await Promise.all(admins.map((admin) => admin.del('{lock:order:1}')));
  await lock.release();
  await locker.close();
});
