import {
  ClockSkewError,
  createLocker,
  keySlot,
  type Lock,
  type Locker,
  type LockLostError,
} from '@lock/core';
import {
  createSkewClock,
  type RedisServer,
  serverClockOffset,
  skewClockUnavailable,
  startCluster,
  waitFor,
} from '@lock/testing';
import type { Cluster } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { skewWarnings } from '../support/clock-skew.js';

const SKEW = 3_000;

/** The first `count` names `lock-<n>` whose lock key (`{lock:<name>}`) lies in `start..end`, each in a slot of its own. */
function keysIn(start: number, end: number, count: number): string[] {
  const names: string[] = [];
  const slots = new Set<number>();
  for (let n = 0; names.length < count; n++) {
    const slot = keySlot(`{lock:lock-${n}}`);
    if (slot < start || slot > end || slots.has(slot)) continue;
    slots.add(slot);
    names.push(`lock-${n}`);
  }
  return names;
}

/** A name other than `name` whose lock key lies in the same slot as `name`'s. */
function sameSlotAs(name: string): string {
  const slot = keySlot(`{lock:${name}}`);
  for (let n = 0; ; n++) {
    const other = `${name}-${n}`;
    if (keySlot(`{lock:${other}}`) === slot) return other;
  }
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// Without a C compiler the shim cannot be built: skipped with the reason printed, except in CI
// (CI=true), where the test runs and fails on the missing compiler (no skipped tests in CI).
const missing = skewClockUnavailable();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) console.warn(`skipping the clockSkew test across a cluster failover: ${missing}`);

afterEach(() => {
  vi.restoreAllMocks();
});

/** What `failedOver` gives its test: the state right after the failover, nothing sent since. */
interface FailedOver {
  readonly locker: Locker;
  readonly redis: Cluster;
  /** A lock of the failed-over shard, taken before the failover: unconfirmed (no WAIT on a cluster). */
  readonly held: Lock;
  readonly heldKey: string;
  /** Another name on that shard, in a slot of its own. */
  readonly freshKey: string;
  /** A name on the other shard, whose master's clock is in step. */
  readonly otherKey: string;
  readonly promoted: RedisServer;
  readonly promotedAddress: string;
  /** The clock-skew warnings since just before the failover. */
  readonly warnings: () => string[];
}

/**
 * A 2-master cluster whose first master's only replica runs SKEW ms ahead, a locker checking
 * clocks with 'refuse', a lock held on the first shard, then that shard failed over to the
 * skewed replica; `act` runs before anything else is sent, so the client has not seen the change.
 */
async function failedOver(act: (state: FailedOver) => Promise<void>): Promise<void> {
  const clock = createSkewClock(SKEW);
  try {
    // Nodes are indexed masters first, then each master's replicas: node 2 is the first master's
    // only replica, and the only node whose clock runs ahead.
    await using cluster = await startCluster({
      masters: 2,
      replicasPerMaster: 1,
      node: (index) => (index === 2 ? { env: clock.env } : undefined),
    });
    const [shard, sound] = cluster.slotRanges;
    const skewedReplica = cluster.replicas[0]!;
    expect(Math.abs(await serverClockOffset(shard!.master.client()))).toBeLessThan(500);
    expect(Math.abs((await serverClockOffset(skewedReplica.client())) - SKEW)).toBeLessThan(500);
    const [heldKey, freshKey] = keysIn(shard!.start, shard!.end, 2);
    const [otherKey] = keysIn(sound!.start, sound!.end, 1);
    const redis = cluster.client();
    redis.on('error', () => {});
    const locker = createLocker({ redis, clockSkew: { margin: 1_000, action: 'refuse' } });
    // Granted by the first master, whose clock is in step.
    const held = await locker.acquire(heldKey!, { ttl: 60_000, wait: 0 });
    const warnings = skewWarnings();
    const { promoted } = await cluster.failover({ key: `{lock:${heldKey}}` });
    expect(promoted).toBe(skewedReplica);
    await act({
      locker,
      redis,
      held,
      heldKey: heldKey!,
      freshKey: freshKey!,
      otherKey: otherKey!,
      promoted,
      promotedAddress: `127.0.0.1:${promoted.port}`,
      warnings,
    });
    await locker.close();
  } finally {
    clock.remove();
  }
}

describe.skipIf(skip)('a cluster failover to a replica whose clock is off', () => {
  it("'refuse' refuses the shard's keys after it, naming the promoted node; the unconfirmed lock taken before ends ('failover'); the other shard still grants", async () => {
    await failedOver(
      async ({ locker, redis, held, heldKey, freshKey, otherKey, promoted, promotedAddress, warnings }) => {
        const promotedRunId = String(await promoted.client().call('INFO', 'server')).match(
          /run_id:(\w+)/,
        )![1]!;
        // A cluster client learns of a failover only from a slot refresh: it is led to one before
        // the next acquisition. A coordinated failover loses no write: the lock is on the promoted
        // node. Asking for it meets the demoted node's MOVED, and the refresh that follows stamps
        // the slot's counter on the promoted node: a master change.
        expect(await redis.exists(`{lock:${heldKey}}`)).toBe(1);
        await waitFor('the hold taken before the failover to end', async () => held.signal.aborted, {
          timeout: 10_000,
        });
        expect((held.signal.reason as LockLostError).reason).toBe('failover');
        // The engine gave the hold up: that is the answer, and the key is freed in the background
        // by its owner's name (releases are never refused for a clock).
        expect(await held.release()).toBe('not-owner');
        await waitFor(
          'the lost hold to be freed',
          async () => (await redis.exists(`{lock:${heldKey}}`)) === 0,
        );

        const refused = await locker
          .acquire(freshKey, { ttl: 5_000, wait: 0 })
          .catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(ClockSkewError);
        const error = refused as ClockSkewError;
        expect(error.key).toBe(freshKey);
        expect(error.server).toBe(`${promotedAddress} (run_id ${promotedRunId.slice(0, 8)})`);
        expect(error.margin).toBe(1_000);
        expect(Math.abs(error.offset - SKEW)).toBeLessThan(500);
        expect(await redis.exists(`{lock:${freshKey}}`)).toBe(0);
        // Still off: refused again, and so is the key of the lock lost to the failover.
        await expect(locker.acquire(freshKey, { ttl: 5_000, wait: 0 })).rejects.toBeInstanceOf(
          ClockSkewError,
        );
        await expect(locker.acquire(heldKey, { ttl: 5_000, wait: 0 })).rejects.toBeInstanceOf(ClockSkewError);
        expect(await redis.exists(`{lock:${heldKey}}`)).toBe(0);
        expect(warnings()).toHaveLength(1);
        expect(warnings()[0]).toMatch(new RegExp(`^the clock of Redis master ${escaped(promotedAddress)} `));

        const other = await locker.acquire(otherKey, { ttl: 5_000, wait: 0 });
        expect(await redis.exists(`{lock:${otherKey}}`)).toBe(1);
        expect(await other.release()).toBe('released');
      },
    );
  }, 30_000);

  it("'refuse', the failover not seen yet: a grant ioredis moves to the promoted node is undone, then refused for its clock", async () => {
    await failedOver(async ({ locker, heldKey, promoted, promotedAddress, warnings }) => {
      // The slot's counter was stamped on the demoted master: the acquisition is sent there at
      // once, and ioredis follows its MOVED to the promoted node, which grants. That grant is
      // undone and the node checked; the next attempt is refused for its clock.
      const besideKey = sameSlotAs(heldKey);
      const beside = await locker
        .acquire(besideKey, { ttl: 5_000, wait: 5_000 })
        .catch((error: unknown) => error);
      expect(beside).toBeInstanceOf(ClockSkewError);
      expect((beside as ClockSkewError).server).toMatch(
        new RegExp(`^${escaped(promotedAddress)} \\(run_id \\w{8}\\)$`),
      );
      expect(await promoted.client().exists(`{lock:${besideKey}}`)).toBe(0);
      expect(warnings()).toHaveLength(1);
    });
  }, 30_000);

  it("'refuse', the failover not seen yet: a slot's first stamp, moved on to the promoted node, names that node", async () => {
    await failedOver(async ({ locker, freshKey, promoted, promotedAddress, warnings }) => {
      const fresh = await locker.acquire(freshKey, { ttl: 5_000, wait: 0 }).catch((error: unknown) => error);
      expect(fresh).toBeInstanceOf(ClockSkewError);
      expect((fresh as ClockSkewError).server).toMatch(new RegExp(`^${escaped(promotedAddress)} `));
      expect(await promoted.client().exists(`{lock:${freshKey}}`)).toBe(0);
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toMatch(new RegExp(`^the clock of Redis master ${escaped(promotedAddress)} `));
    });
  }, 30_000);
});
