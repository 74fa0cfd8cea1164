/**
 * S10 (Kleppmann's second example): RedLock client A in its own process, so that a test can
 * freeze it (SIGSTOP) right after its SETs reached the masters and before it read their replies.
 * argv[2] is JSON `{ masters, key, nodeTimeout, history, id, broken }`.
 *
 * On each stdin line `{"ttl": n}` it makes one attempt (no waiting) and prints one JSON line:
 * `{ granted: true, startedAt, grantedAt, validUntil, validUntilNs, fence }` (its
 * `performance.now()` readings, `startedAt` just before the attempt; `validUntilNs` as hrtime) or `{ granted: false, error }`. A grant is held, and
 * recorded as held, until the next line `release`, which answers `{ released: true }`.
 *
 * `broken`: instead of `createRedlock`, a hand-made RedLock that counts validity from the
 * replies (ttl − drift after they came back) instead of from the attempt's start, as a client
 * that ignores the time spent before it read them would: the variant the test's checker must
 * catch. It runs the token protocol's own acquire script on each master, so the keys it leaves
 * are those `createRedlock` makes.
 */
import { createInterface } from 'node:readline';
import { createRedlock, type Lock, tokenProtocol } from '@lock/core';
import { HistoryRecorder, hrtimeOf } from '@lock/testing';
import { Redis } from 'ioredis';

interface Plan {
  masters: string[];
  key: string;
  nodeTimeout: number;
  history: string;
  id: string;
  broken: boolean;
}

/** What `acquire` answers: a hold to release, or why there is none. */
type Attempt =
  | { granted: true; hold: { key: string; fence: number; validUntil: number; release(): Promise<unknown> } }
  | { granted: false; error: string };

const plan = JSON.parse(process.argv[2]!) as Plan;
const clients = plan.masters.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
for (const client of clients) client.on('error', () => {});
const recorder = new HistoryRecorder(plan.id, { file: plan.history });
const locker = createRedlock({ clients, nodeTimeout: plan.nodeTimeout });
const protocol = tokenProtocol();
const quorum = Math.floor(clients.length / 2) + 1;

/** The broken client: validity counted from the replies. */
async function acquireFromReplies(key: string, ttl: number): Promise<Attempt> {
  const resource = `lock:${key}`;
  const owner = `broken-${process.pid}-${performance.now()}`;
  const replies = await Promise.all(
    clients.map((client) => protocol.acquire(client, resource, owner, ttl).catch(() => null)),
  );
  const repliedAt = performance.now();
  const release = () =>
    Promise.all(clients.map((client) => protocol.release(client, resource, owner, owner).catch(() => null)));
  const fences = replies.flatMap((reply) => (reply?.acquired ? [reply.fence] : []));
  if (fences.length < quorum) {
    await release();
    return { granted: false, error: 'LockBusyError' };
  }
  const drift = Math.floor(ttl * 0.01) + 2;
  return {
    granted: true,
    hold: { key, fence: Math.max(...fences), validUntil: repliedAt + ttl - drift, release },
  };
}

async function acquire(key: string, ttl: number): Promise<Attempt> {
  if (plan.broken) return acquireFromReplies(key, ttl);
  try {
    const lock: Lock = await locker.acquire(key, { ttl, wait: 0 });
    return { granted: true, hold: lock };
  } catch (error) {
    return { granted: false, error: (error as Error).name };
  }
}

// Scripts loaded and connections open before the first timed attempt.
const warm = await acquire(`${plan.key}:warm-up`, 5_000);
if (warm.granted) await warm.hold.release();
process.stdout.write(`${JSON.stringify({ ready: warm.granted })}\n`);

let held: Attempt | undefined;
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'release') {
    if (held?.granted) {
      recorder.released(held.hold);
      await held.hold.release();
    }
    held = undefined;
    process.stdout.write(`${JSON.stringify({ released: true })}\n`);
    continue;
  }
  const { ttl } = JSON.parse(line) as { ttl: number };
  const startedAt = performance.now();
  held = await acquire(plan.key, ttl);
  const grantedAt = performance.now();
  if (held.granted) {
    recorder.acquired(held.hold);
    const { fence, validUntil } = held.hold;
    // validUntil also as hrtime (CLOCK_MONOTONIC, shared with the test process), in ns.
    const validUntilNs = String(hrtimeOf(validUntil));
    process.stdout.write(
      `${JSON.stringify({ granted: true, startedAt, grantedAt, validUntil, validUntilNs, fence })}\n`,
    );
  } else {
    process.stdout.write(`${JSON.stringify({ granted: false, error: held.error })}\n`);
  }
}
recorder.close();
await locker.close();
for (const client of clients) client.disconnect();
