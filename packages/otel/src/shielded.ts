import { diag } from '@opentelemetry/api';

/** Reports a failure of this package to OpenTelemetry's diagnostic logger: see `log`. */
export function report(message: string, error?: unknown): void {
  log(() => diag.error(message, ...(error === undefined ? [] : [error])));
}

/** Warns through OpenTelemetry's diagnostic logger: see `log`. */
export function warn(message: string): void {
  log(() => diag.warn(message));
}

/**
 * A logger that throws would carry its failure into the lock call, into `instrumentLocks()` half
 * set up or, from a diagnostics_channel subscriber or store transform, crash the process (Node
 * rethrows those as uncaught exceptions): its own failure has nowhere left to go, so it is dropped.
 */
function log(write: () => void): void {
  try {
    write();
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
