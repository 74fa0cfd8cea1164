import { createLocker, lockEvents, type RenewEvent } from '@lock/core';
import { ATTR_ERROR_TYPE, instrumentLocks, METRIC_LOCK_RENEWAL_BATCH_SIZE } from '@lock/otel';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis as RedisClient } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meters, Redis, recorded } from './support/telemetry.js';

describe('watchdog renewal rounds', () => {
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

  it('records the batch size of a failed round apart, with error.type _OTHER', async () => {
    const metrics = meters();
    const rounds: RenewEvent[] = [];
    let onRound = (_: RenewEvent) => {};
    const record = (message: unknown) => {
      rounds.push(message as RenewEvent);
      onRound(message as RenewEvent);
    };
    /** Resolves at the next round whose `failed` is `failed`. */
    const nextRound = (failed: boolean) =>
      new Promise<void>((resolve) => {
        onRound = (round) => {
          if (round.failed === failed) resolve();
        };
      });
    lockEvents.renew.subscribe(record);
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    const locker = createLocker({ redis, ttl: 900, commandTimeout: 100 });
    try {
      try {
        const renewed = nextRound(false);
        await locker.acquire('job:1');
        await renewed;
        // Frozen, Redis answers no round within the command timeout: the watchdog's round fails.
        const failed = nextRound(true);
        server.pause();
        try {
          await failed;
        } finally {
          server.resume();
        }
      } finally {
        // Together, so that both saw the same rounds.
        instrumentation.disable();
        lockEvents.renew.unsubscribe(record);
        await locker.close();
      }
      const all = await metrics.collect();
      const count = (failed: boolean) => rounds.filter((round) => round.failed === failed).length;
      expect(count(true)).toBeGreaterThanOrEqual(1);
      expect(count(false)).toBeGreaterThanOrEqual(1);
      expect(recorded(all, METRIC_LOCK_RENEWAL_BATCH_SIZE, { [ATTR_ERROR_TYPE]: '_OTHER' })).toBe(
        count(true),
      );
      expect(recorded(all, METRIC_LOCK_RENEWAL_BATCH_SIZE, { [ATTR_ERROR_TYPE]: undefined })).toBe(
        count(false),
      );
    } finally {
      await metrics.shutdown();
    }
  });
});
