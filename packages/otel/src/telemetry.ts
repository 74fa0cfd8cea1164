import {
  type Attributes,
  type Context,
  INVALID_SPAN_CONTEXT,
  type Meter,
  type MeterProvider,
  metrics,
  type Span,
  type SpanOptions,
  trace,
} from '@opentelemetry/api';
import { ATTR_LOCK_KEY, ATTR_LOCK_PROTOCOL } from './attributes.js';
import { keyPattern } from './key-pattern.js';
import { createLockMetrics, type LockMetrics } from './metrics.js';
import type { InstrumentLocksOptions } from './options.js';
import { report } from './shielded.js';

const SCOPE = '@lock/otel';

/** What the recorders of one `instrumentLocks()` call share. */
export interface Telemetry {
  /**
   * A span of the tracer. When starting it throws (the SDK passes on what a span processor's
   * `onStart` or a sampler of the user's throws), a non-recording span with an invalid context
   * instead, so that the call or hold it is for is still counted.
   */
  startSpan(name: string, options: SpanOptions, parent: Context): Span;
  readonly meterProvider: MeterProvider;
  readonly meter: Meter;
  readonly metrics: LockMetrics;
  /** The `lock.key` of a key; `*` if the user's `keyPattern` fails, never the raw key. */
  pattern(key: string): string;
  /** The attributes every metric point about a lock carries. */
  metricAttributes(protocol: string, pattern: string): Attributes;
}

export function createTelemetry(options: InstrumentLocksOptions): Telemetry {
  const render = options.keyPattern ?? keyPattern;
  const keyOnMetrics = options.keyOnMetrics ?? false;
  const meterProvider = options.meterProvider ?? metrics.getMeterProvider();
  const meter = meterProvider.getMeter(SCOPE);
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
  return {
    startSpan(name, spanOptions, parent) {
      try {
        return tracer.startSpan(name, spanOptions, parent);
      } catch (error) {
        report(`${SCOPE}: failed to start a span; the metrics count without it`, error);
        return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
      }
    },
    meterProvider,
    meter,
    metrics: createLockMetrics(meter),
    pattern(key) {
      try {
        const rendered = render(key);
        if (typeof rendered === 'string') return rendered;
        report(`${SCOPE}: keyPattern returned ${typeof rendered}, not a string`);
      } catch (error) {
        report(`${SCOPE}: keyPattern threw`, error);
      }
      return '*';
    },
    metricAttributes: (protocol, pattern) =>
      keyOnMetrics
        ? { [ATTR_LOCK_PROTOCOL]: protocol, [ATTR_LOCK_KEY]: pattern }
        : { [ATTR_LOCK_PROTOCOL]: protocol },
  };
}
