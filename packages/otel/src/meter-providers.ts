import { createNoopMeter, type Meter, type MeterProvider } from '@opentelemetry/api';
import { warn } from './shielded.js';

/** How many enabled instrumentations record to each meter provider. */
const instrumentations = new WeakMap<MeterProvider, number>();

/**
 * Counts one instrumentation on `provider` until the returned function is called. A second one
 * on the same provider adds every lock to the same instruments again, so every metric counts each
 * lock twice. That is allowed (two tracer providers may share one meter provider) but is far more
 * often a second `instrumentLocks()` by mistake, so it is logged. The API's no-op meter, all a
 * provider gives before an SDK registers one, records nothing and cannot count twice.
 */
export function joinMeterProvider(provider: MeterProvider, meter: Meter): () => void {
  if (meter === createNoopMeter()) return () => {};
  const count = (instrumentations.get(provider) ?? 0) + 1;
  instrumentations.set(provider, count);
  if (count > 1) {
    warn(
      `@lock/otel: ${count} instrumentLocks() instances record to one meter provider: each of its lock metrics counts every lock ${count} times`,
    );
  }
  let joined = true;
  return () => {
    if (!joined) return;
    joined = false;
    instrumentations.set(provider, (instrumentations.get(provider) ?? 1) - 1);
  };
}
