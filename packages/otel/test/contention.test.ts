import {
  AcquireTimeoutError,
  createLocker,
  type Lock,
  LockAbortError,
  LockBusyError,
  type Locker,
} from '@lock/core';
import {
  ATTR_ERROR_TYPE,
  ATTR_LOCK_ATTEMPTS,
  ATTR_LOCK_FENCE,
  ATTR_LOCK_HOLD_OUTCOME,
  ATTR_LOCK_KEY,
  ATTR_LOCK_OUTCOME,
  ATTR_LOCK_PROTOCOL,
  ATTR_LOCK_REENTRY,
  ATTR_LOCK_WAIT_MS,
  instrumentLocks,
  METRIC_LOCK_ACQUISITIONS,
  METRIC_LOCK_HELD,
  METRIC_LOCK_HOLD_DURATION,
  METRIC_LOCK_LOSSES,
  METRIC_LOCK_TIMEOUTS,
  METRIC_LOCK_WAIT_DURATION,
  METRIC_LOCK_WAITING,
} from '@lock/otel';
import { type RedisServer, startRedis } from '@lock/testing';
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  everythingRecorded,
  idOf,
  meters,
  parentOf,
  Redis,
  recorded,
  spanExporter,
  total,
  tracer,
} from './support/telemetry.js';

interface Call {
  readonly caller: string;
  /** ms the test measured around the acquire call alone. */
  elapsed: number;
  lock?: Lock | null;
  error?: unknown;
}

describe('ten waiters contend for one lock', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
    return () => server.stop();
  });

  let locker: Locker;
  const metrics = meters();
  const calls = new Map<string, Call>();
  const owners = new Set<string>();
  let spans: ReadableSpan[] = [];

  /** One acquire call under a caller span of its own (named `caller`), then `after` with its lock. */
  function call(
    caller: string,
    acquire: () => Promise<Lock | null>,
    after?: (lock: Lock) => Promise<unknown>,
  ) {
    const record: Call = { caller, elapsed: 0 };
    calls.set(caller, record);
    return tracer.startActiveSpan(caller, async (span) => {
      const started = performance.now();
      try {
        record.lock = await acquire();
        record.elapsed = performance.now() - started;
        if (record.lock) owners.add(record.lock.owner);
        if (record.lock && after) await after(record.lock);
      } catch (error) {
        record.elapsed = performance.now() - started;
        record.error = error;
      } finally {
        span.end();
      }
      return record;
    });
  }

  beforeAll(async () => {
    spanExporter.reset();
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    expect(instrumentation.activeSpans).toBe(true);
    const redis = new Redis(server.redisOptions);
    locker = createLocker({ redis });
    const key = 'order:42';

    const holder = (await call('holder', () => locker.acquire(key))).lock!;
    await call('try', () => locker.tryAcquire(key));
    await call('no-wait', () => locker.acquire(key, { wait: 0 }));
    const abort = new AbortController();
    const patient = Array.from({ length: 6 }, (_, i) =>
      call(
        `patient-${i}`,
        () => locker.acquire(key, { wait: 20_000 }),
        (lock) => lock.release(),
      ),
    );
    const hasty = Array.from({ length: 3 }, (_, i) =>
      call(`hasty-${i}`, () => locker.acquire(key, { wait: 100 })),
    );
    const aborted = call('aborted', () => locker.acquire(key, { wait: 20_000, signal: abort.signal }));
    // The holder keeps the lock until the hasty waiters gave up and the aborted one was called off.
    await Promise.all(hasty);
    abort.abort();
    await aborted;
    await holder.release();
    await Promise.all(patient);

    spans = spanExporter.getFinishedSpans();
    await locker.close();
    redis.disconnect();
    instrumentation.disable();
    return () => metrics.shutdown();
  });

  const acquireSpanOf = (caller: string) => {
    const parent = spans.find((span) => span.name === caller)!;
    const children = spans.filter(
      (span) => parentOf(span) === idOf(parent) && span.name.startsWith('lock.acquire'),
    );
    expect(children, caller).toHaveLength(1);
    return children[0]!;
  };

  it('gives every call the right outcome', () => {
    expect([...calls.values()].map((c) => c.error?.constructor)).toEqual(
      [...calls.keys()].map((caller) =>
        caller.startsWith('hasty')
          ? AcquireTimeoutError
          : caller === 'aborted'
            ? LockAbortError
            : caller === 'no-wait'
              ? LockBusyError
              : undefined,
      ),
    );
    const outcomes = Object.fromEntries(
      [...calls.keys()].map((caller) => [caller, acquireSpanOf(caller).attributes[ATTR_LOCK_OUTCOME]]),
    );
    expect(outcomes).toEqual({
      holder: 'acquired',
      try: 'busy',
      'no-wait': 'busy',
      ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`patient-${i}`, 'acquired'])),
      ...Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`hasty-${i}`, 'timeout'])),
      aborted: 'aborted',
    });
    expect(spans.filter((span) => span.name.startsWith('lock.acquire'))).toHaveLength(13);
  });

  it('sets error.type exactly on the calls that failed, with an error status: busy and aborted are answers', () => {
    const recordedOf = (span: ReadableSpan) => [
      span.attributes[ATTR_LOCK_OUTCOME],
      span.attributes[ATTR_ERROR_TYPE],
      span.status.code,
    ];
    const answered = (outcome: string) => [outcome, undefined, SpanStatusCode.UNSET];
    expect(
      Object.fromEntries([...calls.keys()].map((caller) => [caller, recordedOf(acquireSpanOf(caller))])),
    ).toEqual({
      holder: answered('acquired'),
      // tryAcquire answers null, acquire({ wait: 0 }) throws LockBusyError: the same answer.
      try: answered('busy'),
      'no-wait': answered('busy'),
      ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`patient-${i}`, answered('acquired')])),
      ...Object.fromEntries(
        Array.from({ length: 3 }, (_, i) => [
          `hasty-${i}`,
          ['timeout', 'ERR_LOCK_ACQUIRE_TIMEOUT', SpanStatusCode.ERROR],
        ]),
      ),
      aborted: answered('aborted'),
    });
    const held = spans.filter((span) => span.name.startsWith('lock.held'));
    expect(held.map(recordedOf)).toEqual(held.map(() => [undefined, undefined, SpanStatusCode.UNSET]));
  });

  it('names spans by key pattern and records protocol, fence, attempts and re-entry', () => {
    for (const record of calls.values()) {
      const span = acquireSpanOf(record.caller);
      expect(span.name).toBe('lock.acquire order:*');
      expect(span.attributes[ATTR_LOCK_KEY]).toBe('order:*');
      expect(span.attributes[ATTR_LOCK_PROTOCOL]).toBe('token');
    }
    const acquired = [...calls.values()].filter((record) => record.lock);
    expect(acquired.map((record) => record.caller)).toEqual([
      'holder',
      ...Array.from({ length: 6 }, (_, i) => `patient-${i}`),
    ]);
    for (const { caller, lock } of acquired) {
      const span = acquireSpanOf(caller);
      expect(span.attributes[ATTR_LOCK_FENCE]).toBe(lock!.fence);
      expect(span.attributes[ATTR_LOCK_REENTRY]).toBe(false);
      expect(span.attributes[ATTR_LOCK_ATTEMPTS]).toBeGreaterThanOrEqual(1);
    }
    for (const i of [0, 1, 2]) {
      const error = calls.get(`hasty-${i}`)!.error as AcquireTimeoutError;
      expect(acquireSpanOf(`hasty-${i}`).attributes[ATTR_LOCK_ATTEMPTS]).toBe(error.attempts);
    }
  });

  it('records a wait within the one the caller measured', () => {
    for (const record of calls.values()) {
      const waited = acquireSpanOf(record.caller).attributes[ATTR_LOCK_WAIT_MS] as number;
      expect(waited, record.caller).toBeGreaterThan(0);
      expect(waited, record.caller).toBeLessThanOrEqual(record.elapsed);
    }
    for (const i of [0, 1, 2]) {
      expect(acquireSpanOf(`hasty-${i}`).attributes[ATTR_LOCK_WAIT_MS]).toBeGreaterThanOrEqual(100);
    }
  });

  it('nests the Redis commands of every acquire call under its span', () => {
    for (const record of calls.values()) {
      const span = acquireSpanOf(record.caller);
      const commands = spans.filter(
        (child) => parentOf(child) === idOf(span) && child.attributes['db.system.name'],
      );
      const scripts = commands.filter((child) => /^eval/.test(String(child.attributes['db.operation.name'])));
      expect(scripts.length, record.caller).toBeGreaterThanOrEqual(
        Number(span.attributes[ATTR_LOCK_ATTEMPTS] ?? 1),
      );
    }
  });

  it('ends a held span, beside the acquire span, at each release', () => {
    const held = spans.filter((span) => span.name === 'lock.held order:*');
    expect(held).toHaveLength(7);
    for (const record of calls.values()) {
      if (!record.lock) continue;
      const parent = spans.find((span) => span.name === record.caller)!;
      const mine = held.filter((span) => parentOf(span) === idOf(parent));
      expect(mine).toHaveLength(1);
      expect(mine[0]!.attributes[ATTR_LOCK_FENCE]).toBe(record.lock.fence);
      expect(mine[0]!.attributes[ATTR_LOCK_HOLD_OUTCOME]).toBe('released');
    }
  });

  it('counts in the metrics exactly what the test did', async () => {
    const all = await metrics.collect();
    expect(total(all, METRIC_LOCK_ACQUISITIONS, { [ATTR_LOCK_PROTOCOL]: 'token' })).toBe(7);
    expect(total(all, METRIC_LOCK_TIMEOUTS)).toBe(3);
    expect(total(all, METRIC_LOCK_LOSSES)).toBe(0);
    expect(total(all, METRIC_LOCK_HELD)).toBe(0);
    expect(total(all, METRIC_LOCK_WAITING)).toBe(0);
    const waits = (outcome: string) =>
      recorded(all, METRIC_LOCK_WAIT_DURATION, { [ATTR_LOCK_OUTCOME]: outcome });
    expect(['acquired', 'busy', 'timeout', 'aborted'].map(waits)).toEqual([7, 2, 3, 1]);
    expect(recorded(all, METRIC_LOCK_HOLD_DURATION, { [ATTR_LOCK_HOLD_OUTCOME]: 'released' })).toBe(7);
    for (const metric of all) {
      for (const point of metric.dataPoints)
        expect(Object.keys(point.attributes)).not.toContain(ATTR_LOCK_KEY);
    }
  });

  it('records no owner token anywhere', async () => {
    expect(owners.size).toBe(7);
    const recordedText = everythingRecorded(spans, await metrics.collect()).join('\n');
    for (const owner of owners) expect(recordedText).not.toContain(owner);
  });
});
