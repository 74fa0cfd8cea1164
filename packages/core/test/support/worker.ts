/**
 * A contention worker: acquires the key `iterations` times with the locker its factory builds,
 * does a read-modify-write of the witness counter inside each hold, and prints one JSON line
 * per hold with its hrtime interval, when its acquire call was made, and its fence.
 */
import { type Locker, LockUnavailableError } from '@lock/core';
import { Redis } from 'ioredis';

interface Plan {
  factory: string;
  config: unknown;
  key: string;
  witnessUrl: string;
  witnessKey: string;
  iterations: number;
  id: number;
}

/** What a factory module's default export returns. */
export interface WorkerLocker {
  locker: Locker;
  close(): Promise<void>;
}

const plan = JSON.parse(process.argv[2]!) as Plan;
const factory = (await import(plan.factory)) as { default: (config: unknown) => Promise<WorkerLocker> };
const { locker, close } = await factory.default(plan.config);
const witness = new Redis(plan.witnessUrl);
const lines: string[] = [];

for (let i = 0; i < plan.iterations; i++) {
  // Every attempt of this call, and so every grant it gets, reaches Redis after this instant.
  const requested = process.hrtime.bigint();
  const lock = await locker.acquire(plan.key, { ttl: 5_000, wait: 60_000 });
  const start = process.hrtime.bigint();
  const seen = Number((await witness.get(plan.witnessKey)) ?? '0');
  await witness.set(plan.witnessKey, String(seen + 1));
  const end = process.hrtime.bigint();
  lock.assertHeld();
  // A release Redis does not answer in time (a pause) leaves the lock to end by its lease.
  await lock.release().catch((error: unknown) => {
    if (!(error instanceof LockUnavailableError)) throw error;
  });
  lines.push(
    JSON.stringify({
      worker: plan.id,
      requested: String(requested),
      start: String(start),
      end: String(end),
      fence: lock.fence,
    }),
  );
}

process.stdout.write(`${lines.join('\n')}\n`);
witness.disconnect();
await close();
