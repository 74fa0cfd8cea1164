import { InvalidOptionError, refuseUnknown } from '@lock/core';
import type { MeterProvider, TracerProvider } from '@opentelemetry/api';

/** Options of `instrumentLocks`. */
export interface InstrumentLocksOptions {
  /** Where the spans go. Default: the global tracer provider, also when it is registered later. */
  readonly tracerProvider?: TracerProvider;
  /**
   * Where the metrics go. Default: the global meter provider registered when `instrumentLocks`
   * is called (the API has no proxy for meters: call it after the SDK has started).
   */
  readonly meterProvider?: MeterProvider;
  /**
   * Renders a lock key for the `lock.key` attribute and the span names. Keys often hold ids or
   * personal data, so by default they are templated. Pass `(key) => key` to record raw keys.
   * Default: `keyPattern` (`order:42` → `order:*`).
   */
  readonly keyPattern?: (key: string) => string;
  /**
   * Also puts `lock.key` on every metric point. Each distinct pattern makes its own time series:
   * only for a `keyPattern` that maps all keys onto a small, fixed set. Default: `false`.
   */
  readonly keyOnMetrics?: boolean;
}

const OPTIONS: readonly (keyof InstrumentLocksOptions)[] = [
  'tracerProvider',
  'meterProvider',
  'keyPattern',
  'keyOnMetrics',
];

/** Refuses anything `instrumentLocks` cannot use, naming the option, before subscribing to anything. */
export function checkOptions(options: unknown): InstrumentLocksOptions {
  refuseUnknown(options, OPTIONS, 'the instrumentLocks() options');
  const given = options as Record<string, unknown>;
  checkProvider(given, 'tracerProvider', 'getTracer');
  checkProvider(given, 'meterProvider', 'getMeter');
  if (given.keyPattern !== undefined && typeof given.keyPattern !== 'function') {
    throw new InvalidOptionError('keyPattern', given.keyPattern, 'a function from key to string');
  }
  if (given.keyOnMetrics !== undefined && typeof given.keyOnMetrics !== 'boolean') {
    throw new InvalidOptionError('keyOnMetrics', given.keyOnMetrics, 'a boolean');
  }
  return given as InstrumentLocksOptions;
}

function checkProvider(given: Record<string, unknown>, name: string, method: string): void {
  const provider = given[name];
  if (provider === undefined) return;
  if (typeof (provider as Record<string, unknown> | null)?.[method] !== 'function') {
    throw new InvalidOptionError(name, provider, `an OpenTelemetry ${name} (with ${method}())`);
  }
}
