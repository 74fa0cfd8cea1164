import type { Redis } from 'ioredis';
import { percentile, sleep, sum } from '../measure/stats.js';
import type { Subject } from '../subjects.js';

export interface HandoffResult {
  /** From the holder calling `release()` to the waiter's `acquire()` resolving, in ms. */
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  readonly iterations: number;
}

/** The waiter is surely subscribed, queued or polling after this long. */
const SETTLE_MS = 20;
/** Added at random to the settle time, so a polling waiter is caught at a random point of its poll interval. */
const JITTER_MS = 20;

/**
 * Un-timed hand-offs, back to back, before a kind's first timed one: until this many are done or
 * WARM_MS has passed. The timed hand-offs (a hundred at most) are too few for V8 to compile a
 * waiting path; a service that hands locks on all day runs it compiled.
 */
const WARM_HANDOFFS = 2_000;
const WARM_MS = 1_500;
/** Kinds already warmed in this process: compiled code outlives the subject instances of one slice. */
const warmed = new Set<string>();

/**
 * `holder` takes the key, `waiter` (another subject of the same kind, on its own connections)
 * starts waiting for it, and once it has waited a while the holder releases; the gap is the time
 * from the release call to the waiter having the lock. Gaps in ms, one per iteration.
 */
export async function handoffSlice(holder: Subject, waiter: Subject, iterations: number): Promise<number[]> {
  const key = `bench:handoff:${holder.name}`;
  if (!warmed.has(holder.name)) {
    warmed.add(holder.name);
    await warmUp(holder, waiter, `${key}:warm-up`);
  }
  const gaps: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const release = await holder.acquire(key, 10_000);
    let acquired = Number.NaN;
    const waiting = waiter.acquire(key, 10_000).then((releaseWaiter) => {
      acquired = performance.now();
      return releaseWaiter;
    });
    await sleep(SETTLE_MS + Math.random() * JITTER_MS);
    if (!Number.isNaN(acquired))
      throw new Error(`${holder.name}: the waiter acquired ${key} while it was held`);
    const releasing = performance.now();
    await release();
    const releaseWaiter = await waiting;
    gaps.push(acquired - releasing);
    await releaseWaiter();
  }
  return gaps;
}

async function warmUp(holder: Subject, waiter: Subject, key: string): Promise<void> {
  const until = performance.now() + WARM_MS;
  for (let i = 0; i < WARM_HANDOFFS && performance.now() < until; i++) {
    const release = await holder.acquire(key, 10_000);
    const waiting = waiter.acquire(key, 10_000);
    // One turn of the event loop: the waiter's first attempt is on the wire before the release.
    await new Promise((resolve) => setImmediate(resolve));
    await release();
    await (await waiting)();
  }
}

/**
 * The physical limit of a hand-off on this machine: one PING, sent after the same idle time as
 * the holder's release() above. After a few ms of idleness a round trip costs several times a
 * back-to-back one (the processes and the VM's cores have gone to sleep), and a hand-off needs
 * at least the release's round trip and the message. Times in ms, one per iteration.
 */
export async function idleRoundTrips(redis: Redis, iterations: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    await sleep(SETTLE_MS + Math.random() * JITTER_MS);
    const sent = performance.now();
    await redis.ping();
    times.push(performance.now() - sent);
  }
  return times;
}

export function handoffOf(slices: readonly number[][]): HandoffResult {
  const gaps = slices.flat();
  return {
    p50: percentile(gaps, 50),
    p99: percentile(gaps, 99),
    mean: sum(gaps) / gaps.length,
    iterations: gaps.length,
  };
}
