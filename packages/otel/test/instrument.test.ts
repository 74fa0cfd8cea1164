import { executionAsyncResource } from 'node:async_hooks';
import {
  acquireTracing,
  createLocker,
  InvalidOptionError,
  type Locker,
  lockEvents,
  type RenewEvent,
} from '@lock/core';
import {
  ATTR_ERROR_TYPE,
  ATTR_LOCK_FENCE,
  ATTR_LOCK_HOLD_OUTCOME,
  ATTR_LOCK_KEY,
  ATTR_LOCK_LOST_REASON,
  ATTR_LOCK_OUTCOME,
  ATTR_LOCK_PROTOCOL,
  ATTR_LOCK_REENTRY,
  ATTR_LOCK_WAIT_LIMIT_MS,
  instrumentLocks,
  type LockInstrumentation,
  METRIC_LOCK_ACQUISITIONS,
  METRIC_LOCK_HELD,
  METRIC_LOCK_HOLD_DURATION,
  METRIC_LOCK_LOSSES,
  METRIC_LOCK_RENEWAL_BATCH_SIZE,
  METRIC_LOCK_RENEWALS,
  METRIC_LOCK_WAIT_DURATION,
  METRIC_LOCK_WAITING,
} from '@lock/otel';
import { type RedisServer, refusalHiding, startRedis, waitFor } from '@lock/testing';
import { context, diag, metrics as globalMetrics, ROOT_CONTEXT, SpanStatusCode } from '@opentelemetry/api';
import { AsyncHooksContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Redis as RedisClient } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  contextManager,
  idOf,
  meters,
  parentOf,
  pointsOf,
  Redis,
  recorded,
  spanExporter,
  total,
  tracer,
} from './support/telemetry.js';

const channelsInUse = () =>
  acquireTracing.hasSubscribers || Object.values(lockEvents).some((channel) => channel.hasSubscribers);

describe('instrumentLocks', () => {
  let server: RedisServer;
  let redis: RedisClient;
  let locker: Locker;
  let metrics: ReturnType<typeof meters>;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.redisOptions);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });
  beforeEach(() => {
    spanExporter.reset();
    metrics = meters();
    locker = createLocker({ redis });
  });
  afterEach(async () => {
    await locker.close();
    await metrics.shutdown();
    expect(channelsInUse()).toBe(false);
  });

  const lockSpans = () => spanExporter.getFinishedSpans().filter((span) => span.name.startsWith('lock.'));

  it('refuses bad options, naming them, before subscribing to anything', () => {
    const bad: [unknown, RegExp][] = [
      [null, /invalid option "options": null/],
      [[], /invalid option "options": \[\]/],
      [{ keyPatern: (key: string) => key }, /unknown option "keyPatern"/],
      [{ keyPattern: 'order:*' }, /invalid option "keyPattern": "order:\*"/],
      [{ keyOnMetrics: 'yes' }, /invalid option "keyOnMetrics": "yes"/],
      [{ tracerProvider: {} }, /invalid option "tracerProvider"/],
      [{ meterProvider: 42 }, /invalid option "meterProvider": 42/],
    ];
    for (const [options, message] of bad) {
      expect(() => instrumentLocks(options as never)).toThrow(InvalidOptionError);
      expect(() => instrumentLocks(options as never)).toThrow(message);
    }
    expect(channelsInUse()).toBe(false);
  });

  it('refuses an unknown option by name without showing or keeping its value, with the name it likely stands for', async () => {
    const secret = 'hunter2-not-to-be-logged';
    const refusal = (options: Record<string, unknown>) =>
      refusalHiding(secret, () => instrumentLocks(options as never));
    const typo = await refusal({ keyPatern: secret });
    expect(typo).toBeInstanceOf(InvalidOptionError);
    expect(typo).toMatchObject({ option: 'keyPatern', value: undefined });
    expect(typo.message).toBe(
      'unknown option "keyPatern" (expected one of the instrumentLocks() options: tracerProvider, meterProvider, keyPattern, keyOnMetrics). Did you mean "keyPattern"?',
    );
    expect((await refusal({ password: secret })).message).not.toContain('Did you mean');
    expect(channelsInUse()).toBe(false);
  });

  it('records a re-entry on its acquire span and keeps one held span until the last release', async () => {
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    await locker.using('cart:5', async () => {
      const again = await locker.acquire('cart:5');
      expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(1);
      await again.release();
      expect(lockSpans().filter((span) => span.name.startsWith('lock.held'))).toHaveLength(0);
    });
    instrumentation.disable();
    const acquires = lockSpans().filter((span) => span.name.startsWith('lock.acquire'));
    expect(acquires.map((span) => span.attributes[ATTR_LOCK_REENTRY])).toEqual([false, true]);
    const held = lockSpans().filter((span) => span.name.startsWith('lock.held'));
    expect(held).toHaveLength(1);
    expect(held[0]!.attributes[ATTR_LOCK_HOLD_OUTCOME]).toBe('released');
    const all = await metrics.collect();
    expect(total(all, METRIC_LOCK_ACQUISITIONS, { [ATTR_LOCK_REENTRY]: false })).toBe(1);
    expect(total(all, METRIC_LOCK_ACQUISITIONS, { [ATTR_LOCK_REENTRY]: true })).toBe(1);
    expect(total(all, METRIC_LOCK_HELD)).toBe(0);
  });

  it('links the held span to the acquire span that took the lock, which ties the two in a job without a span', async () => {
    const instrumentation = instrumentLocks();
    await context.with(ROOT_CONTEXT, async () => (await locker.acquire('job:1')).release());
    instrumentation.disable();
    const [acquire, held] = ['lock.acquire job:*', 'lock.held job:*'].map(
      (name) => lockSpans().find((span) => span.name === name)!,
    );
    expect([parentOf(acquire!), parentOf(held!)]).toEqual([undefined, undefined]);
    expect(held!.links.map((link) => link.context.spanId)).toEqual([idOf(acquire!)]);
    expect(held!.spanContext().traceId).not.toBe(acquire!.spanContext().traceId);
  });

  it('parents what a using() callback does, a re-entry included, on the caller: the acquire span ended before it ran', async () => {
    const instrumentation = instrumentLocks();
    let caller = '';
    try {
      await tracer.startActiveSpan('caller', async (span) => {
        caller = span.spanContext().spanId;
        await locker.using('cart:7', async () => {
          tracer.startSpan('inside').end();
          await (await locker.acquire('cart:7')).release();
        });
        span.end();
      });
    } finally {
      instrumentation.disable();
    }
    const spans = spanExporter.getFinishedSpans().filter((span) => span.name !== 'caller');
    const underCaller = (span: ReadableSpan) => [span.name, parentOf(span) === caller];
    expect(spans.filter((span) => !span.attributes['db.system.name']).map(underCaller)).toEqual([
      ['lock.acquire cart:*', true],
      ['inside', true],
      ['lock.acquire cart:*', true],
      ['lock.held cart:*', true],
    ]);
  });

  it('keeps apart the holds of two lockers on one key with one owner, each re-entered or not', async () => {
    const billing = createLocker({ redis, prefix: 'billing:' });
    const shipping = createLocker({ redis, prefix: 'shipping:' });
    // Fences count per lock: shipping's goes ahead, so a held span's fence says whose hold it is.
    await shipping.acquire('order:1').then((lock) => lock.release());
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    const heldSpans = () => lockSpans().filter((span) => span.name.startsWith('lock.held'));
    try {
      const first = await billing.acquire('order:1', { owner: 'job-7' });
      const again = await billing.acquire('order:1', { owner: 'job-7' });
      const other = await shipping.acquire('order:1', { owner: 'job-7' });
      expect([first.holds, again.holds, other.holds]).toEqual([1, 2, 1]);
      expect([first.fence, other.fence]).toEqual([1, 2]);
      expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(2);

      expect(await first.release()).toBe('held');
      expect(await other.release()).toBe('released');
      // Shipping's hold ended; billing's, re-entered, is still held through its other handle.
      expect(heldSpans().map((span) => span.attributes[ATTR_LOCK_FENCE])).toEqual([other.fence]);
      expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(1);

      expect(await again.release()).toBe('released');
      expect(heldSpans().map((span) => span.attributes[ATTR_LOCK_FENCE])).toEqual([other.fence, first.fence]);
      expect(heldSpans().map((span) => span.attributes[ATTR_LOCK_HOLD_OUTCOME])).toEqual([
        'released',
        'released',
      ]);
      const all = await metrics.collect();
      expect(total(all, METRIC_LOCK_HELD)).toBe(0);
      expect(recorded(all, METRIC_LOCK_HOLD_DURATION, { [ATTR_LOCK_HOLD_OUTCOME]: 'released' })).toBe(2);
      expect(total(all, METRIC_LOCK_ACQUISITIONS, { [ATTR_LOCK_REENTRY]: false })).toBe(2);
      expect(total(all, METRIC_LOCK_ACQUISITIONS, { [ATTR_LOCK_REENTRY]: true })).toBe(1);
    } finally {
      instrumentation.disable();
      await billing.close();
      await shipping.close();
    }
  });

  it('ends the held span of a hold whose release leaves the lock to another locker sharing its explicit owner', async () => {
    // Two lockers on one prefix, as two processes would: Redis counts both holds under one owner.
    const other = createLocker({ redis });
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    const heldSpans = () => lockSpans().filter((span) => span.name.startsWith('lock.held'));
    const ended = () =>
      heldSpans().map((span) => [span.attributes[ATTR_LOCK_HOLD_OUTCOME], span.status.code]);
    try {
      const first = await locker.acquire('order:1', { owner: 'job-7' });
      const second = await other.acquire('order:1', { owner: 'job-7' });
      expect([first.holds, second.holds]).toEqual([1, 2]);

      // Given up here, though the owner still holds the lock through the other locker.
      expect(await first.release()).toBe('held');
      expect(ended()).toEqual([['released', SpanStatusCode.UNSET]]);
      expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(1);

      expect(await second.release()).toBe('released');
      expect(ended()).toEqual([
        ['released', SpanStatusCode.UNSET],
        ['released', SpanStatusCode.UNSET],
      ]);
      const all = await metrics.collect();
      expect(total(all, METRIC_LOCK_HELD)).toBe(0);
      expect(recorded(all, METRIC_LOCK_HOLD_DURATION, { [ATTR_LOCK_HOLD_OUTCOME]: 'released' })).toBe(2);
    } finally {
      instrumentation.disable();
      await other.close();
    }
  });

  it('leaves lock.wait_limit_ms out for an unbounded wait, and records a bounded one as given', async () => {
    const instrumentation = instrumentLocks();
    await locker.acquire('order:1', { wait: Number.POSITIVE_INFINITY }).then((lock) => lock.release());
    await locker.acquire('order:2', { wait: 250 }).then((lock) => lock.release());
    await locker.tryAcquire('order:3').then((lock) => lock?.release());
    instrumentation.disable();
    const acquires = lockSpans().filter((span) => span.name.startsWith('lock.acquire'));
    expect(acquires.map((span) => span.attributes[ATTR_LOCK_OUTCOME])).toEqual([
      'acquired',
      'acquired',
      'acquired',
    ]);
    expect(acquires.map((span) => Object.hasOwn(span.attributes, ATTR_LOCK_WAIT_LIMIT_MS))).toEqual([
      false,
      true,
      true,
    ]);
    expect(acquires.map((span) => span.attributes[ATTR_LOCK_WAIT_LIMIT_MS])).toEqual([undefined, 250, 0]);
  });

  it('keeps the held span open while the lock is held when instrumentation starts mid-hold', async () => {
    let instrumentation: ReturnType<typeof instrumentLocks> | undefined;
    try {
      await locker.using('cart:5', async () => {
        instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
        const again = await locker.acquire('cart:5');
        expect(again.holds).toBe(2);
        expect(await again.release()).toBe('held');
        expect(await locker.isLocked('cart:5')).toBe(true);
        expect(lockSpans().filter((span) => span.name.startsWith('lock.held'))).toEqual([]);
        expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(1);
      });
      const held = lockSpans().filter((span) => span.name.startsWith('lock.held'));
      expect(held.map((span) => span.attributes[ATTR_LOCK_HOLD_OUTCOME])).toEqual(['released']);
      expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(0);
    } finally {
      instrumentation?.disable();
    }
  });

  it('keeps the held span open while the lock is held across disable() and a new instrumentLocks()', async () => {
    const first = instrumentLocks({ meterProvider: metrics.meterProvider });
    let second: ReturnType<typeof instrumentLocks> | undefined;
    try {
      await locker.using('cart:6', async () => {
        first.disable();
        // disable() ended the first held span, without an outcome.
        const ended = lockSpans().filter((span) => span.name.startsWith('lock.held'));
        expect(ended.map((span) => span.attributes[ATTR_LOCK_HOLD_OUTCOME])).toEqual([undefined]);
        second = instrumentLocks({ meterProvider: metrics.meterProvider });
        const again = await locker.acquire('cart:6');
        expect(await again.release()).toBe('held');
        expect(lockSpans().filter((span) => span.name.startsWith('lock.held'))).toHaveLength(1);
        expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(1);
      });
      const held = lockSpans().filter((span) => span.name.startsWith('lock.held'));
      expect(held.map((span) => span.attributes[ATTR_LOCK_HOLD_OUTCOME])).toEqual([undefined, 'released']);
      expect(total(await metrics.collect(), METRIC_LOCK_HELD)).toBe(0);
    } finally {
      first.disable();
      second?.disable();
    }
  });

  it('parents the held span on the caller when the call began under another instrumentation: re-enabled, or a second one, mid-call', async () => {
    /**
     * Acquires and releases under a caller span, with `enable` run once the call has begun (its
     * acquire spans start synchronously, the lock is granted after a round trip): for each held
     * span, whether the caller is its parent.
     */
    const heldUnderCaller = (enable: () => void) => {
      spanExporter.reset();
      return tracer.startActiveSpan('caller', async (span) => {
        const pending = locker.acquire('order:1');
        enable();
        await (await pending).release();
        span.end();
        return lockSpans()
          .filter((recorded) => recorded.name.startsWith('lock.held'))
          .map((recorded) => parentOf(recorded) === span.spanContext().spanId);
      });
    };
    const enabled = [instrumentLocks()];
    try {
      // The call's active context is the acquire span of the first, which disable() ended.
      expect(
        await heldUnderCaller(() => {
          enabled[0]!.disable();
          enabled.push(instrumentLocks());
        }),
      ).toEqual([true]);
      // One held span each: the one enabled mid-call finds the other's acquire span active.
      expect(await heldUnderCaller(() => enabled.push(instrumentLocks()))).toEqual([true, true]);
    } finally {
      for (const instrumentation of enabled) instrumentation.disable();
    }
  });

  it('lets two instrumentations each record every lock under the caller, and either disable() alone', async () => {
    await locker.acquire('warm:1').then((lock) => lock.release());
    const ownTracer = () => {
      const exporter = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
      return { exporter, provider };
    };
    const [a, b, c] = [ownTracer(), ownTracer(), ownTracer()];
    /**
     * One acquire+release under a caller span: the parents of the acquire and held spans each
     * given exporter got, and of the Redis commands sent (the acquire script, then the release
     * script), by name: `caller`, or the exporter's index for its acquire span.
     */
    const record = async (exporters: InMemorySpanExporter[]) => {
      for (const exporter of [spanExporter, a.exporter, b.exporter, c.exporter]) exporter.reset();
      await tracer.startActiveSpan('caller', async (span) => {
        await locker.acquire('order:1').then((lock) => lock.release());
        span.end();
      });
      const ids = new Map([
        [idOf(spanExporter.getFinishedSpans().find((s) => s.name === 'caller')!), 'caller'],
      ]);
      const lockSpansOf = (exporter: InMemorySpanExporter) =>
        exporter.getFinishedSpans().filter((span) => span.name.startsWith('lock.'));
      exporters.forEach((exporter, index) => {
        for (const span of lockSpansOf(exporter))
          if (span.name.startsWith('lock.acquire')) ids.set(idOf(span), String(index));
      });
      const named = (span: ReadableSpan) => ids.get(parentOf(span) ?? '') ?? 'other';
      return {
        lock: exporters.map((exporter) => lockSpansOf(exporter).map((span) => `${span.name}<${named(span)}`)),
        commands: spanExporter
          .getFinishedSpans()
          .filter((span) => span.attributes['db.system.name'])
          .map(named),
      };
    };
    const underCaller = ['lock.acquire order:*<caller', 'lock.held order:*<caller'];
    const first = instrumentLocks({ tracerProvider: a.provider });
    const second = instrumentLocks({ tracerProvider: b.provider });
    let third: ReturnType<typeof instrumentLocks> | undefined;
    try {
      expect([first.activeSpans, second.activeSpans]).toEqual([true, true]);
      // Both record the lock under the caller; the first one's acquire span is the active one.
      expect(await record([a.exporter, b.exporter])).toEqual({
        lock: [underCaller, underCaller],
        commands: ['0', 'caller'],
      });

      second.disable();
      expect(await record([a.exporter, b.exporter])).toEqual({
        lock: [underCaller, []],
        commands: ['0', 'caller'],
      });

      third = instrumentLocks({ tracerProvider: c.provider });
      first.disable();
      expect(await record([a.exporter, c.exporter])).toEqual({
        lock: [[], underCaller],
        commands: ['1', 'caller'],
      });
    } finally {
      first.disable();
      second.disable();
      third?.disable();
      await Promise.all([a, b, c].map(({ provider }) => provider.shutdown()));
    }
  });

  it('parents the spans of an instrumentation made before the context manager on the caller, also once another makes its acquire span active', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    // Made while no context manager is registered (before the SDK started): no active spans.
    context.disable();
    const early = instrumentLocks({ tracerProvider: provider });
    context.setGlobalContextManager(contextManager);
    const later = instrumentLocks();
    try {
      expect([early.activeSpans, later.activeSpans]).toEqual([false, true]);
      let caller = '';
      await tracer.startActiveSpan('caller', async (span) => {
        caller = span.spanContext().spanId;
        await locker.acquire('order:1').then((lock) => lock.release());
        span.end();
      });
      const parents = exporter
        .getFinishedSpans()
        .filter((span) => span.name.startsWith('lock.'))
        .map((span) => [span.name, parentOf(span) === caller]);
      expect(parents).toEqual([
        ['lock.acquire order:*', true],
        ['lock.held order:*', true],
      ]);
    } finally {
      early.disable();
      later.disable();
      await provider.shutdown();
    }
  });

  it('warns when a second instrumentation records to the same meter provider, whose metrics then count every lock twice', async () => {
    const warnings: string[] = [];
    diag.setLogger({ ...silent, warn: (message: string) => warnings.push(message) });
    const other = meters();
    const enabled: ReturnType<typeof instrumentLocks>[] = [];
    const enable = (options?: Parameters<typeof instrumentLocks>[0]) => {
      const instrumentation = instrumentLocks(options);
      enabled.push(instrumentation);
      return instrumentation;
    };
    const sharing = () => warnings.filter((message) => message.includes('meter provider'));
    try {
      // The API's no-op meter provider, before any is registered, counts nothing twice.
      enable();
      enable();
      expect(sharing()).toEqual([]);

      const first = enable({ meterProvider: metrics.meterProvider });
      enable({ meterProvider: other.meterProvider });
      expect(sharing()).toEqual([]);
      const second = enable({ meterProvider: metrics.meterProvider });
      expect(sharing()).toHaveLength(1);
      await locker.acquire('order:1').then((lock) => lock.release());
      expect(total(await metrics.collect(), METRIC_LOCK_ACQUISITIONS)).toBe(2);
      expect(total(await other.collect(), METRIC_LOCK_ACQUISITIONS)).toBe(1);

      // Once both are disabled, the provider is free again.
      first.disable();
      second.disable();
      enable({ meterProvider: metrics.meterProvider });
      expect(sharing()).toHaveLength(1);

      // The global meter provider, which instrumentations given none share.
      globalMetrics.setGlobalMeterProvider(other.meterProvider);
      enable();
      expect(sharing()).toHaveLength(2);
    } finally {
      for (const instrumentation of enabled) instrumentation.disable();
      globalMetrics.disable();
      diag.disable();
      await other.shutdown();
    }
  });

  it('records unavailable and error outcomes with their code and an error status', async () => {
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    await locker.acquire('warm:1').then((lock) => lock.release());
    server.pause();
    try {
      await expect(locker.acquire('order:1', { wait: 300 })).rejects.toMatchObject({
        code: 'ERR_LOCK_UNAVAILABLE',
      });
    } finally {
      server.resume();
    }
    await locker.close();
    await expect(locker.acquire('order:2')).rejects.toMatchObject({ code: 'ERR_LOCK_CLOSED' });
    instrumentation.disable();
    const failed = lockSpans().filter((span) => span.name === 'lock.acquire order:*');
    expect(
      failed.map((span) => [span.attributes[ATTR_LOCK_OUTCOME], span.attributes[ATTR_ERROR_TYPE]]),
    ).toEqual([
      ['unavailable', 'ERR_LOCK_UNAVAILABLE'],
      ['error', 'ERR_LOCK_CLOSED'],
    ]);
    expect(failed.map((span) => span.status)).toEqual([
      { code: SpanStatusCode.ERROR },
      { code: SpanStatusCode.ERROR },
    ]);
  });

  it('records an acquisition no replica confirmed as unavailable, as the HTTP and GraphQL adapters answer it', async () => {
    await using replica = await startRedis({ config: { replicaof: `${server.host} ${server.port}` } });
    await waitFor('the replica online', async () =>
      (await redis.info('replication')).includes('state=online'),
    );
    const replicated = createLocker({ redis, replication: { replicas: 1, timeout: 100 } });
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    replica.pause();
    try {
      await expect(replicated.acquire('order:1', { wait: 0 })).rejects.toMatchObject({
        code: 'ERR_LOCK_NOT_REPLICATED',
      });
    } finally {
      replica.resume();
    }
    instrumentation.disable();
    await replicated.close();
    const [span] = lockSpans().filter((recorded) => recorded.name === 'lock.acquire order:*');
    expect([span?.attributes[ATTR_LOCK_OUTCOME], span?.attributes[ATTR_ERROR_TYPE]]).toEqual([
      'unavailable',
      'ERR_LOCK_NOT_REPLICATED',
    ]);
  });

  it('uses the given keyPattern, and puts the key on metrics only when asked', async () => {
    const first = instrumentLocks({
      meterProvider: metrics.meterProvider,
      keyPattern: (key) => key.toUpperCase(),
    });
    await locker.acquire('order:1').then((lock) => lock.release());
    first.disable();
    expect(lockSpans().map((span) => span.name)).toEqual(['lock.acquire ORDER:1', 'lock.held ORDER:1']);
    expect(pointsOf(await metrics.collect(), METRIC_LOCK_ACQUISITIONS)[0]!.attributes).toEqual({
      'lock.protocol': 'token',
      'lock.reentry': false,
    });

    const second = meters();
    const keyed = instrumentLocks({ meterProvider: second.meterProvider, keyOnMetrics: true });
    await locker.acquire('order:1').then((lock) => lock.release());
    keyed.disable();
    expect(pointsOf(await second.collect(), METRIC_LOCK_ACQUISITIONS)[0]!.attributes).toEqual({
      'lock.protocol': 'token',
      'lock.key': 'order:*',
      'lock.reentry': false,
    });
    await second.shutdown();
  });

  it('survives a keyPattern that throws: the key becomes *, the lock works, the error goes to diag', async () => {
    const errors: unknown[] = [];
    diag.setLogger({ ...silent, error: (...args: unknown[]) => errors.push(args) });
    const instrumentation = instrumentLocks({
      keyPattern: () => {
        throw new Error('no pattern today');
      },
    });
    try {
      const lock = await locker.acquire('order:1');
      await lock.release();
    } finally {
      instrumentation.disable();
      diag.disable();
    }
    expect(lockSpans().map((span) => [span.name, span.attributes[ATTR_LOCK_KEY]])).toEqual([
      ['lock.acquire *', '*'],
      ['lock.held *', '*'],
    ]);
    expect(errors.length).toBeGreaterThan(0);
  });

  it('survives a diag logger that throws too: the failure it cannot log is dropped, never thrown into the lock call', async () => {
    const logged: unknown[] = [];
    diag.setLogger({
      ...silent,
      error: (...args: unknown[]) => {
        logged.push(args);
        throw new Error('logger down');
      },
    });
    const instrumentation = instrumentLocks({
      keyPattern: () => {
        throw new Error('no pattern today');
      },
    });
    let released: string;
    try {
      released = await (await locker.acquire('order:1')).release();
    } finally {
      instrumentation.disable();
      diag.disable();
    }
    expect(released).toBe('released');
    expect(logged.length).toBeGreaterThan(0);
    expect(lockSpans().map((span) => span.name)).toEqual(['lock.acquire *', 'lock.held *']);
  });

  it('survives a diag logger that throws at its setup warnings: instrumentLocks() returns, and a meter provider counts it once', async () => {
    const other = meters();
    const enabled: LockInstrumentation[] = [];
    const enable = (options: Parameters<typeof instrumentLocks>[0]) => {
      enabled.push(instrumentLocks(options));
    };
    const down = () => {
      throw new Error('logger down');
    };
    diag.setLogger({ ...silent, warn: down, error: down });
    try {
      // Both warn: a second instrumentation on one meter provider, and one without a context manager.
      enable({ meterProvider: metrics.meterProvider });
      enable({ meterProvider: metrics.meterProvider });
      context.disable();
      try {
        enable({ meterProvider: other.meterProvider });
      } finally {
        context.setGlobalContextManager(contextManager);
      }
      expect(enabled.map((instrumentation) => instrumentation.activeSpans)).toEqual([true, true, false]);
    } finally {
      for (const instrumentation of enabled) instrumentation.disable();
      diag.disable();
    }
    // Once disabled, each provider takes one instrumentation without a double-count warning.
    const warnings: string[] = [];
    diag.setLogger({ ...silent, warn: (message: string) => warnings.push(message) });
    try {
      instrumentLocks({ meterProvider: metrics.meterProvider }).disable();
      instrumentLocks({ meterProvider: other.meterProvider }).disable();
    } finally {
      diag.disable();
      await other.shutdown();
    }
    expect(warnings).toEqual([]);
  });

  it('keeps locking, and counts right, when a span processor of the user’s throws at every span end', async () => {
    const errors: unknown[] = [];
    const warnings: string[] = [];
    diag.setLogger({
      ...silent,
      error: (...args: unknown[]) => errors.push(args),
      warn: (message: string) => warnings.push(message),
    });
    const throwing = new BasicTracerProvider({
      spanProcessors: [
        {
          onStart() {},
          onEnd() {
            throw new Error('exporter down');
          },
          forceFlush: async () => {},
          shutdown: async () => {},
        },
      ],
    });
    const instrumentation = instrumentLocks({
      tracerProvider: throwing,
      meterProvider: metrics.meterProvider,
    });
    let disabled: unknown = 'not called';
    const releases: string[] = [];
    try {
      releases.push(await (await locker.acquire('order:1')).release());
      const ended = await metrics.collect();
      expect([total(ended, METRIC_LOCK_WAITING), total(ended, METRIC_LOCK_HELD)]).toEqual([0, 0]);
      expect([
        recorded(ended, METRIC_LOCK_WAIT_DURATION),
        recorded(ended, METRIC_LOCK_HOLD_DURATION),
      ]).toEqual([1, 1]);

      const held = await locker.acquire('order:2');
      const waiting = locker.acquire('order:2', { wait: 5_000 });
      try {
        instrumentation.disable();
        disabled = 'returned';
      } catch (error) {
        disabled = error;
      }
      const stopped = await metrics.collect();
      expect([total(stopped, METRIC_LOCK_WAITING), total(stopped, METRIC_LOCK_HELD)]).toEqual([0, 0]);
      releases.push(await held.release());
      releases.push(await (await waiting).release());
      // Left by the disabled one, the meter provider takes another without a double-count warning.
      instrumentLocks({ meterProvider: metrics.meterProvider }).disable();
    } finally {
      instrumentation.disable();
      diag.disable();
      await throwing.shutdown();
    }
    expect(disabled).toBe('returned');
    expect(releases).toEqual(['released', 'released', 'released']);
    expect(warnings.filter((message) => message.includes('meter provider'))).toEqual([]);
    expect(errors.length).toBeGreaterThan(0);
  });

  it('counts the call and the hold whose span a span processor or sampler of the user’s failed to start', async () => {
    const errors: unknown[] = [];
    diag.setLogger({ ...silent, error: (...args: unknown[]) => errors.push(args) });
    const fail = () => {
      throw new Error('tracing down');
    };
    const throwing = {
      'a processor throwing in onStart': new BasicTracerProvider({
        spanProcessors: [{ onStart: fail, onEnd() {}, forceFlush: async () => {}, shutdown: async () => {} }],
      }),
      'a sampler throwing': new BasicTracerProvider({
        sampler: { shouldSample: fail, toString: () => 'down' },
      }),
    };
    const counts: Record<string, number[]> = {};
    const commandParents: Record<string, Set<boolean>> = {};
    try {
      for (const [name, provider] of Object.entries(throwing)) {
        const own = meters();
        const instrumentation = instrumentLocks({
          tracerProvider: provider,
          meterProvider: own.meterProvider,
        });
        const gauges = async () => {
          const all = await own.collect();
          return [total(all, METRIC_LOCK_WAITING), total(all, METRIC_LOCK_HELD)];
        };
        try {
          spanExporter.reset();
          const held = await tracer.startActiveSpan('caller', async (span) => {
            const lock = await locker.acquire('order:1');
            span.end();
            return lock;
          });
          // Its acquire span starts as the call does: it is counted waiting from then on.
          const waiting = locker.acquire('order:1', { wait: 5_000 });
          const whileWaiting = await gauges();
          const released = [await held.release(), await (await waiting).release()];
          const all = await own.collect();
          // The Redis commands of the call made under a span stay there; the others (made under
          // none, with instrumentation-ioredis's default requireParentSpan) are not recorded.
          // Read in the caller's trace: the locker's shared subscriber may carry a command into
          // the trace of an earlier test's call.
          const spans = spanExporter.getFinishedSpans();
          const callerSpan = spans.find((span) => span.name === 'caller')!;
          const caller = idOf(callerSpan);
          commandParents[name] = new Set(
            spans
              .filter(
                (span) =>
                  span.attributes['db.system.name'] &&
                  span.spanContext().traceId === callerSpan.spanContext().traceId,
              )
              .map((span) => parentOf(span) === caller),
          );
          counts[name] = [
            ...whileWaiting,
            ...(await gauges()),
            recorded(all, METRIC_LOCK_WAIT_DURATION),
            recorded(all, METRIC_LOCK_HOLD_DURATION),
            total(all, METRIC_LOCK_ACQUISITIONS),
            released.filter((result) => result === 'released').length,
          ];
        } finally {
          instrumentation.disable();
          await own.shutdown();
        }
      }
    } finally {
      diag.disable();
      await Promise.all(Object.values(throwing).map((provider) => provider.shutdown()));
    }
    // waiting and held while the second call waits, then after both releases; the durations of
    // both calls and both holds; acquisitions; releases.
    expect(counts).toEqual({
      'a processor throwing in onStart': [1, 1, 0, 0, 2, 2, 2, 2],
      'a sampler throwing': [1, 1, 0, 0, 2, 2, 2, 2],
    });
    expect(commandParents).toEqual({
      'a processor throwing in onStart': new Set([true]),
      'a sampler throwing': new Set([true]),
    });
    expect(errors.length).toBeGreaterThan(0);
  });

  it('counts the renewals and the loss of a lock acquired before instrumentLocks(), as it counts its acquisitions', async () => {
    // Renewed within a second, and long enough that a loaded machine's stall does not end the
    // lease before the watchdog renews it (a server frozen for 400 ms lost a 300 ms one).
    const renewing = createLocker({ redis, ttl: 3_000 });
    const lock = await renewing.acquire('job:1');
    const renewals: unknown[] = [];
    const countRenewal = (message: unknown) => {
      if ((message as { renewal: boolean }).renewal) renewals.push(message);
    };
    const renewed = new Promise<void>((resolve) => {
      const once = () => {
        lockEvents.extend.unsubscribe(once);
        resolve();
      };
      lockEvents.extend.subscribe(once);
    });
    const gone = new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
    lockEvents.extend.subscribe(countRenewal);
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    try {
      await renewed;
      await redis.del(...(await redis.keys('*job:1*')));
      await gone;
    } finally {
      // Together, so that both saw the same renewals.
      instrumentation.disable();
      lockEvents.extend.unsubscribe(countRenewal);
      await renewing.close();
    }
    const all = await metrics.collect();
    expect(renewals.length).toBeGreaterThanOrEqual(1);
    expect(total(all, METRIC_LOCK_RENEWALS, { [ATTR_LOCK_PROTOCOL]: 'token' })).toBe(renewals.length);
    expect(
      total(all, METRIC_LOCK_LOSSES, { [ATTR_LOCK_LOST_REASON]: 'taken', [ATTR_LOCK_PROTOCOL]: 'token' }),
    ).toBe(1);
    expect(total(all, METRIC_LOCK_HELD)).toBe(0);
  });

  it('records the batch size of a failed round apart, with error.type _OTHER', async () => {
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
    const renewing = createLocker({ redis, ttl: 900, commandTimeout: 100 });
    try {
      const renewed = nextRound(false);
      await renewing.acquire('job:1');
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
      await renewing.close();
    }
    const all = await metrics.collect();
    const count = (failed: boolean) => rounds.filter((round) => round.failed === failed).length;
    expect(count(true)).toBeGreaterThanOrEqual(1);
    expect(count(false)).toBeGreaterThanOrEqual(1);
    expect(recorded(all, METRIC_LOCK_RENEWAL_BATCH_SIZE, { [ATTR_ERROR_TYPE]: '_OTHER' })).toBe(count(true));
    expect(recorded(all, METRIC_LOCK_RENEWAL_BATCH_SIZE, { [ATTR_ERROR_TYPE]: undefined })).toBe(
      count(false),
    );
  });

  it('stops on disable(): open spans end, up-down counters return to zero, nothing more is recorded', async () => {
    const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
    const held = await locker.acquire('order:1');
    // The acquire span starts, and the call counts as waiting, synchronously inside acquire().
    const waiting = locker.acquire('order:1', { wait: 5_000 });
    expect(total(await metrics.collect(), METRIC_LOCK_WAITING)).toBe(1);
    instrumentation.disable();
    instrumentation.disable();
    const ended = lockSpans().map((span) => [span.name, span.attributes[ATTR_LOCK_OUTCOME]]);
    expect(ended).toEqual([
      ['lock.acquire order:*', 'acquired'],
      ['lock.acquire order:*', undefined],
      ['lock.held order:*', undefined],
    ]);
    const all = await metrics.collect();
    expect(total(all, METRIC_LOCK_WAITING)).toBe(0);
    expect(total(all, METRIC_LOCK_HELD)).toBe(0);
    await held.release();
    await (await waiting).release();
    expect(lockSpans()).toHaveLength(3);
    expect(pointsOf(await metrics.collect(), METRIC_LOCK_WAIT_DURATION)).toHaveLength(1);
  });

  it('leaves no storage of its own switched on after disable(), whose cost every async operation of the process would pay', async () => {
    // Node tags each new async resource once per AsyncLocalStorage ever run and not disabled.
    const tagsOfANewResource = () =>
      new Promise<number>((resolve) =>
        setTimeout(() => resolve(Object.getOwnPropertySymbols(executionAsyncResource()).length), 0),
      );
    const cycle = async () => {
      const instrumentation = instrumentLocks({ meterProvider: metrics.meterProvider });
      await (await locker.acquire('order:1')).release();
      instrumentation.disable();
    };
    // The first cycle may switch on OpenTelemetry's own storage, which the app keeps using.
    await cycle();
    const before = await tagsOfANewResource();
    for (let i = 0; i < 5; i++) await cycle();
    expect(await tagsOfANewResource()).toBe(before);
  });

  describe('with a context manager that keeps no AsyncLocalStorage', () => {
    beforeEach(() => {
      context.disable();
      context.setGlobalContextManager(new AsyncHooksContextManager().enable());
      return () => {
        context.disable();
        context.setGlobalContextManager(contextManager);
      };
    });

    it('still records acquire spans under the caller, without making them active', async () => {
      const instrumentation = instrumentLocks();
      expect(instrumentation.activeSpans).toBe(false);
      await tracer.startActiveSpan('caller', async (span) => {
        await locker.acquire('order:1').then((lock) => lock.release());
        span.end();
      });
      instrumentation.disable();
      const spans = spanExporter.getFinishedSpans();
      const caller = spans.find((span) => span.name === 'caller')!;
      const acquire = spans.find((span) => span.name === 'lock.acquire order:*')!;
      expect(parentOf(acquire)).toBe(idOf(caller));
      expect(spans.filter((span) => parentOf(span) === idOf(acquire))).toEqual([]);
      expect(spans.filter((span) => span.attributes['db.system.name']).map(parentOf)).toContain(idOf(caller));
    });
  });
});

const silent = { verbose() {}, debug() {}, info() {}, warn() {}, error() {} };
