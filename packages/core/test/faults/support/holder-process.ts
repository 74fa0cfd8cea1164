/**
 * A lock holder in its own process, so that a test can stop its event loop or kill it without
 * stopping the test's. argv[2] is JSON `{ url, key, ttl, wait, retry? }`: the locker's ttl
 * (renewed by the watchdog), how long to wait for the key and the locker's backoff. It prints `ready` before acquiring, then one
 * JSON line `{ owner, fence, at, handoff }` once it holds the key (`at`: `process.hrtime.bigint()`, the
 * host's monotonic clock, shared by every process; `handoff`: the `lock:acquire` event's), and
 * releases when its stdin ends. Each
 * stdin line `write <key> <value>` makes a fenced write with its fence, without checking that
 * it still holds the lock (what a paused holder does when it wakes), and prints `wrote <bool>`.
 */
import { subscribe } from 'node:diagnostics_channel';
import { createInterface } from 'node:readline';
import { type AcquireEvent, createLocker, fencedSet, type RetryOptions } from '@lock/core';
import { Redis } from 'ioredis';

interface Plan {
  url: string;
  key: string;
  ttl: number;
  wait: number;
  retry?: RetryOptions;
}

const plan = JSON.parse(process.argv[2]!) as Plan;
const redis = new Redis(plan.url);
const locker = createLocker({ redis, ttl: plan.ttl, retry: plan.retry });
let handoff: boolean | undefined;
subscribe('lock:acquire', (message) => {
  handoff = (message as AcquireEvent).handoff;
});
process.stdout.write('ready\n');
const lock = await locker.acquire(plan.key, { wait: plan.wait });
const at = String(process.hrtime.bigint());
process.stdout.write(`${JSON.stringify({ owner: lock.owner, fence: lock.fence, at, handoff })}\n`);
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  const [command, key, value] = line.split(' ');
  if (command !== 'write' || !key || !value) return;
  void fencedSet(redis, key, lock.fence, value).then((written) => process.stdout.write(`wrote ${written}\n`));
});
await new Promise((resolve) => input.once('close', resolve));
await lock.release();
await locker.close();
redis.disconnect();
