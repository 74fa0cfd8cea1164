import { createLocker, type Locker } from '@lock/core';
import { dbStatementSerializer, instrumentLocks } from '@lock/otel';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis as RedisClient } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  everythingRecorded,
  meters,
  Redis,
  redisInstrumentation,
  spanExporter,
  tracer,
} from './support/telemetry.js';

describe('owner tokens', () => {
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
  afterEach(() => {
    redisInstrumentation.setConfig({ dbStatementSerializer });
  });

  /**
   * Acquires, re-enters, extends, contends for and releases locks of both core protocols with
   * every span and metric recorded, and answers what was recorded and the owners involved.
   */
  async function workload() {
    spanExporter.reset();
    const metrics = meters();
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    const lockers: Locker[] = [
      // Renewed within the section below (at a third of the lease), yet long enough that a
      // loaded host's stall does not end the lease first (at 300 ms, one of 200 ms could).
      createLocker({ redis, ttl: 1_500 }),
      createLocker({ redis, protocol: 'legacy', prefix: 'legacy-' }),
    ];
    const owners = new Set<string>();
    await tracer.startActiveSpan('workload', async (span) => {
      for (const locker of lockers) {
        await locker.using('account:1', async (outer) => {
          owners.add(outer.owner);
          const inner = await locker.acquire('account:1');
          owners.add(inner.owner);
          await inner.extend();
          await inner.release();
          expect(await locker.tryAcquire('account:1', { owner: 'someone-else-entirely' })).toBeNull();
          owners.add('someone-else-entirely');
          // Past the first renewal of the 1.5 s lease.
          await new Promise((resolve) => setTimeout(resolve, 600));
        });
      }
      span.end();
    });
    for (const locker of lockers) await locker.close();
    const recorded = everythingRecorded(spanExporter.getFinishedSpans(), await metrics.collect());
    instrumentation.disable();
    await metrics.shutdown();
    return { owners, recorded: recorded.join('\n'), spans: spanExporter.getFinishedSpans() };
  }

  it('appear in no exported span or metric, Redis command spans included', async () => {
    const { owners, recorded, spans } = await workload();
    expect(owners.size).toBe(3);
    expect(
      spans.filter((span) => /^eval/.test(String(span.attributes['db.operation.name']))).length,
    ).toBeGreaterThan(8);
    for (const owner of owners) expect(recorded).not.toContain(owner);
  });

  it('do appear with the default statement serializer of instrumentation-ioredis (why ours exists)', async () => {
    redisInstrumentation.setConfig({ dbStatementSerializer: undefined });
    const { owners, recorded } = await workload();
    for (const owner of owners) expect(recorded).toContain(owner);
  });
});
