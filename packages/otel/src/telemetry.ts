import {
  type Attributes,
  type Meter,
  type MeterProvider,
  metrics,
  type Tracer,
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
  readonly tracer: Tracer;
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
  return {
    tracer: (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE),
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
