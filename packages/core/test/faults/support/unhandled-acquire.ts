/**
 * An acquire whose rejection nobody handles, in its own process (a test runner treats an
 * unhandled rejection as a failure of its own). argv[2] is JSON `{ url, key }`: `key` is held by
 * another process, so `acquire(key, { wait: 0 })` rejects with `LockBusyError`. It prints
 * `unhandled <error name>` when Node reports the rejection unhandled, as for any promise.
 */
import { createLocker } from '@lock/core';
import { Redis } from 'ioredis';

const { url, key } = JSON.parse(process.argv[2]!) as { url: string; key: string };
const locker = createLocker({ redis: new Redis(url) });
process.on('unhandledRejection', (reason) => {
  console.log(`unhandled ${(reason as Error).name}`);
  process.exit(0);
});
void locker.acquire(key, { wait: 0 });
