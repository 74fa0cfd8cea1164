/**
 * A contender process for S1. argv[2] is JSON `{ url, witnessUrl, key, iterations, id, history,
 * locked, workers, lockerId? }` (`lockerId`: the locker's configured `id`, the default being random). Each iteration takes the lock (unless `locked` is false: the broken variant, which
 * records the same events without locking), does a read-modify-write of the witness counter
 * with a random 0–2 ms pause in between, and releases. Events go to the JSONL file `history`;
 * acquire and release latencies (ms) are printed as one JSON line at the end. It prints `ready`
 * and starts on the first stdin line, so that every contender runs at once (processes take
 * longer to start than a short run lasts).
 */
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { createLocker } from '@lock/core';
import { HistoryRecorder } from '@lock/testing';
import { Redis } from 'ioredis';

interface Plan {
  url: string;
  witnessUrl: string;
  key: string;
  iterations: number;
  id: string;
  history: string;
  locked: boolean;
  /** How many contenders run: the unlocked ones meet once (see `allHaveRead`). */
  workers: number;
  lockerId?: string;
}

const plan = JSON.parse(process.argv[2]!) as Plan;
const redis = new Redis(plan.url);
const witness = new Redis(plan.witnessUrl);
const locker = createLocker({ redis, replication: false, ...(plan.lockerId ? { id: plan.lockerId } : {}) });
const recorder = new HistoryRecorder(plan.id, { file: plan.history });
const acquireMs: number[] = [];
const releaseMs: number[] = [];
const pause = () => new Promise((resolve) => setTimeout(resolve, Math.random() * 2));

/**
 * Without the lock, the first section of every contender waits between its read and its write
 * until all have read: the overlaps and the lost updates the broken variant allows then occur
 * whatever the scheduling, not only when the contenders happen to run at once.
 */
async function allHaveRead(): Promise<void> {
  const readers = `${plan.key}:readers`;
  await witness.incr(readers);
  const end = performance.now() + 10_000;
  while (Number(await witness.get(readers)) < plan.workers) {
    if (performance.now() > end) throw new Error(`${plan.id}: the other contenders never read`);
    await pause();
  }
  // Each section then lasts past the moment all were in by more than the checker's tolerance (1 ms).
  await new Promise((resolve) => setTimeout(resolve, 5));
}

process.stdout.write('ready\n');
await once(createInterface({ input: process.stdin }), 'line');

for (let i = 0; i < plan.iterations; i++) {
  const started = performance.now();
  const lock = plan.locked
    ? await locker.acquire(plan.key, { ttl: 5_000, wait: 120_000 })
    : { key: plan.key, fence: i, validUntil: performance.now() + 5_000, release: async () => 'released' };
  acquireMs.push(performance.now() - started);
  recorder.acquired(lock);
  const seen = Number((await witness.get(`${plan.key}:witness`)) ?? '0');
  if (!plan.locked && i === 0) await allHaveRead();
  await pause();
  await witness.set(`${plan.key}:witness`, String(seen + 1));
  recorder.released(lock);
  const releasing = performance.now();
  await lock.release();
  releaseMs.push(performance.now() - releasing);
}
recorder.close();
process.stdout.write(`${JSON.stringify({ acquireMs, releaseMs })}\n`);
await locker.close();
redis.disconnect();
witness.disconnect();
