import { diag } from '@opentelemetry/api';

/**
 * Reports a failure of this package to OpenTelemetry's diagnostic logger. A logger that throws
 * would carry the failure into the lock call or, from a diagnostics_channel subscriber or store
 * transform, crash the process (Node rethrows those as uncaught exceptions): its own failure has
 * nowhere left to go, so it is dropped.
 */
export function report(message: string, error?: unknown): void {
  try {
    diag.error(message, ...(error === undefined ? [] : [error]));
  } catch {}
}

/**
 * `fn`, made unable to throw: telemetry must never take a service down, nor fail a lock call, so
 * its failures (a span processor, a sampler or a meter of the user's that throws) are reported
 * instead, and the call answers `undefined`.
 */
export function shielded<T, R>(doing: string, fn: (input: T) => R): (input: T) => R | undefined {
  return (input) => {
    try {
      return fn(input);
    } catch (error) {
      report(`@lock/otel: failed to ${doing}`, error);
      return undefined;
    }
  };
}
