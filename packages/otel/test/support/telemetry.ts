import { createRequire } from 'node:module';
import { type Attributes, context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type * as IORedis from 'ioredis';
import { dbStatementSerializer } from '../../src/index.js';

/*
 * The OpenTelemetry setup of a service, as the README shows it, with in-memory exporters: the
 * global context manager and tracer provider, and the ioredis instrumentation with our serializer.
 */
export const contextManager = new AsyncLocalStorageContextManager();
context.setGlobalContextManager(contextManager);
export const spanExporter = new InMemorySpanExporter();
export const tracerProvider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(spanExporter)],
});
trace.setGlobalTracerProvider(tracerProvider);
export const tracer = tracerProvider.getTracer('test');
export const redisInstrumentation = new IORedisInstrumentation({ dbStatementSerializer });

/**
 * ioredis, patched: the instrumentation hooks `require`, and vitest loaded ioredis before this
 * module ran (through @lock/testing), so it is required again here for the hook to see it.
 */
export const { Redis, Cluster } = createRequire(import.meta.url)('ioredis') as typeof IORedis;

/** A meter provider whose cumulative totals a test can read at any time. */
export function meters() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    /** Every metric as last collected now. */
    async collect(): Promise<MetricData[]> {
      exporter.reset();
      await reader.forceFlush();
      return exporter
        .getMetrics()
        .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
    },
    shutdown: () => meterProvider.shutdown(),
  };
}

/** The points of metric `name` whose attributes include `where`. */
export function pointsOf(all: MetricData[], name: string, where: Attributes = {}) {
  const metric = all.find((candidate) => candidate.descriptor.name === name);
  if (!metric) return [];
  return (metric.dataPoints as { attributes: Attributes; value: unknown }[]).filter((point) =>
    Object.entries(where).every(([key, value]) => point.attributes[key] === value),
  );
}

/** The sum over the points of a counter (or up-down counter) whose attributes include `where`. */
export function total(all: MetricData[], name: string, where: Attributes = {}): number {
  return pointsOf(all, name, where).reduce((sum, point) => sum + (point.value as number), 0);
}

/** How many values a histogram recorded in the points whose attributes include `where`. */
export function recorded(all: MetricData[], name: string, where: Attributes = {}): number {
  const metric = all.find((candidate) => candidate.descriptor.name === name);
  if (metric && metric.dataPointType !== DataPointType.HISTOGRAM)
    throw new Error(`${name} is not a histogram`);
  return pointsOf(all, name, where).reduce((sum, point) => sum + (point.value as { count: number }).count, 0);
}

export const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
export const idOf = (span: ReadableSpan) => span.spanContext().spanId;

/** Every string a span or metric point exported: names, attribute values, events, links, statuses. */
export function everythingRecorded(spans: readonly ReadableSpan[], all: MetricData[]): string[] {
  const values = (attributes: Attributes = {}) =>
    Object.entries(attributes).flatMap(([key, value]) => [key, JSON.stringify(value)]);
  return [
    ...spans.flatMap((span) => [
      span.name,
      span.status.message ?? '',
      ...values(span.attributes),
      ...values(span.resource.attributes),
      ...span.events.flatMap((event) => [event.name, ...values(event.attributes)]),
      ...span.links.flatMap((link) => values(link.attributes)),
    ]),
    ...all.flatMap((metric) => [
      metric.descriptor.name,
      ...(metric.dataPoints as { attributes: Attributes }[]).flatMap((point) => values(point.attributes)),
    ]),
  ];
}
