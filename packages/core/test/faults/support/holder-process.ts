/**
 * A lock holder in its own process, so that a test can stop its event loop or kill it without
 * stopping the test's. argv[2] is JSON `{ url, key, ttl, wait }`: the locker's ttl (renewed by
 * the watchdog) and how long to wait for the key. It prints `ready` before acquiring, then one
 * JSON line `{ owner, fence, at }` once it holds the key (`at`: `process.hrtime.bigint()`, the
 * host's monotonic clock, shared by every process), and releases when its stdin ends.
 */
import { createLocker } from '@lock/core';
import { Redis } from 'ioredis';

interface Plan {
  url: string;
  key: string;
  ttl: number;
  wait: number;
}

const plan = JSON.parse(process.argv[2]!) as Plan;
const redis = new Redis(plan.url);
const locker = createLocker({ redis, ttl: plan.ttl });
process.stdout.write('ready\n');
const lock = await locker.acquire(plan.key, { wait: plan.wait });
const at = String(process.hrtime.bigint());
process.stdout.write(`${JSON.stringify({ owner: lock.owner, fence: lock.fence, at })}\n`);
process.stdin.resume();
await new Promise((resolve) => process.stdin.once('end', resolve));
await lock.release();
await locker.close();
redis.disconnect();
