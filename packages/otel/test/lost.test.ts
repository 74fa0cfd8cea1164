import { createLocker, type Lock, type Locker, lockEvents } from '@lock/core';
import {
  ATTR_ERROR_TYPE,
  ATTR_LOCK_HOLD_OUTCOME,
  ATTR_LOCK_LOST_REASON,
  ATTR_LOCK_OUTCOME,
  ATTR_LOCK_RENEWAL_COUNT,
  instrumentLocks,
  type LockInstrumentation,
  METRIC_LOCK_HELD,
  METRIC_LOCK_HOLD_DURATION,
  METRIC_LOCK_LOSSES,
  METRIC_LOCK_RENEWAL_BATCH_SIZE,
  METRIC_LOCK_RENEWALS,
} from '@lock/otel';
import { proxiedClient, type RedisServer, startRedis } from '@lock/testing';
import { SpanStatusCode } from '@opentelemetry/api';
import type { Redis as RedisClient } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { meters, Redis, recorded, spanExporter, total } from './support/telemetry.js';

/** Resolves once the lock's signal reports it lost. */
function lost(lock: Lock): Promise<unknown> {
  return new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
}

describe('a lost lock', () => {
  let server: RedisServer;
  let redis: RedisClient;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.redisOptions);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  let metrics: ReturnType<typeof meters>;
  let instrumentation: LockInstrumentation;
  let locker: Locker;
  beforeEach(() => {
    spanExporter.reset();
    metrics = meters();
    instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    // Renewed leases the watchdog renews within a second, long enough that a loaded machine's
    // stall (a frozen server for 400 ms lost a 300 ms one) does not end them first.
    locker = createLocker({ redis, ttl: 3_000 });
  });
  afterEach(async () => {
    await locker.close();
    instrumentation.disable();
    await metrics.shutdown();
  });

  const heldSpans = () => spanExporter.getFinishedSpans().filter((span) => span.name.startsWith('lock.held'));

  async function expectLoss(reason: string) {
    const [held] = heldSpans();
    expect(heldSpans()).toHaveLength(1);
    expect(held!.attributes[ATTR_LOCK_HOLD_OUTCOME]).toBe('lost');
    expect(held!.attributes[ATTR_LOCK_LOST_REASON]).toBe(reason);
    expect(held!.attributes[ATTR_ERROR_TYPE]).toBe('ERR_LOCK_LOST');
    expect(held!.status.code).toBe(SpanStatusCode.ERROR);
    const all = await metrics.collect();
    expect(total(all, METRIC_LOCK_LOSSES, { [ATTR_LOCK_LOST_REASON]: reason })).toBe(1);
    expect(total(all, METRIC_LOCK_LOSSES)).toBe(1);
    expect(total(all, METRIC_LOCK_HELD)).toBe(0);
    expect(recorded(all, METRIC_LOCK_HOLD_DURATION, { [ATTR_LOCK_HOLD_OUTCOME]: 'lost' })).toBe(1);
    expect(recorded(all, METRIC_LOCK_HOLD_DURATION)).toBe(1);
    return held!;
  }

  it('ends its held span with reason "taken" when the watchdog finds the key deleted', async () => {
    const lock = await locker.acquire('job:7');
    const gone = lost(lock);
    // The watchdog renews once before the key disappears, so renewals are seen counted too.
    await new Promise<void>((resolve) => {
      const renewed = () => {
        lockEvents.extend.unsubscribe(renewed);
        resolve();
      };
      lockEvents.extend.subscribe(renewed);
    });
    await redis.del(...(await redis.keys('*job:7*')));
    await gone;
    const held = await expectLoss('taken');
    expect(held.attributes[ATTR_LOCK_RENEWAL_COUNT]).toBeGreaterThanOrEqual(1);
    expect(total(await metrics.collect(), METRIC_LOCK_RENEWALS)).toBe(
      held.attributes[ATTR_LOCK_RENEWAL_COUNT],
    );
    // Each renewal round trip is one batch: here, of this one lock.
    expect(recorded(await metrics.collect(), METRIC_LOCK_RENEWAL_BATCH_SIZE)).toBeGreaterThanOrEqual(1);
    // Releasing the lost handle changes nothing recorded.
    expect(await lock.release()).toBe('not-owner');
    expect(heldSpans()).toHaveLength(1);
    expect(recorded(await metrics.collect(), METRIC_LOCK_HOLD_DURATION)).toBe(1);
  });

  it('ends its held span with reason "expired" when a fixed lease runs out', async () => {
    const lock = await locker.acquire('job:8', { ttl: 150 });
    await lost(lock);
    await expectLoss('expired');
  });

  it('ends its held span with reason "closed" when the locker closes, and a call still waiting as an error', async () => {
    const lock = await locker.acquire('job:9');
    const gone = lost(lock);
    // Caught now: close() refuses the call before it returns.
    const waiting = locker.acquire('job:9', { wait: 5_000 }).catch((error: unknown) => error);
    await locker.close();
    expect(await waiting).toMatchObject({ code: 'ERR_LOCK_CLOSED' });
    await gone;
    await expectLoss('closed');
    const acquires = spanExporter.getFinishedSpans().filter((span) => span.name.startsWith('lock.acquire'));
    expect(
      acquires.map((span) => [
        span.attributes[ATTR_LOCK_OUTCOME],
        span.attributes[ATTR_ERROR_TYPE],
        span.status.code,
      ]),
    ).toEqual([
      ['acquired', undefined, SpanStatusCode.UNSET],
      ['error', 'ERR_LOCK_CLOSED', SpanStatusCode.ERROR],
    ]);
  });

  it('ends its held span with reason "taken" when its release proves the key was deleted under it', async () => {
    const lock = await locker.acquire('job:10', { ttl: 60_000, renew: false });
    await redis.del(...(await redis.keys('*job:10*')));
    expect(await lock.release()).toBe('not-owner');
    await expectLoss('taken');
  });

  it('marks a hold "not-owner" when its release found the lock gone but proved no loss (a copy resent after a lost reply)', async () => {
    await using cut = await proxiedClient(server);
    // The copy is answered after a reconnect: well within this deadline, on a loaded machine too.
    const resending = createLocker({ redis: cut.redis, commandTimeout: 10_000 });
    try {
      // The release script loaded: a release answered NOSCRIPT would lose that answer instead.
      await (await resending.acquire('job:11:warm-up')).release();
      spanExporter.reset();
      const lock = await resending.acquire('job:11', { ttl: 60_000, renew: false });
      // The release runs on the server, its reply is lost, and ioredis sends it again once reconnected.
      cut.proxy.resetAfter(0, 'downstream', 1);
      expect(await lock.release()).toBe('not-owner');
      expect(cut.proxy.resets).toBe(1);
    } finally {
      await resending.close();
    }
    const [held] = heldSpans();
    expect(heldSpans()).toHaveLength(1);
    expect(held!.attributes[ATTR_LOCK_HOLD_OUTCOME]).toBe('not-owner');
    expect(held!.attributes[ATTR_ERROR_TYPE]).toBe('ERR_LOCK_NOT_OWNER');
    expect(held!.status.code).toBe(SpanStatusCode.ERROR);
    const all = await metrics.collect();
    expect(recorded(all, METRIC_LOCK_HOLD_DURATION, { [ATTR_LOCK_HOLD_OUTCOME]: 'not-owner' })).toBe(1);
    expect(total(all, METRIC_LOCK_LOSSES)).toBe(0);
    expect(total(all, METRIC_LOCK_HELD)).toBe(0);
  });
});
