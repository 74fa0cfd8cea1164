import { LockHttpWarning } from './errors.js';
import type { LockLogger } from './options.js';

/** Logs each warning code at most once: misuse found per request would otherwise flood the log. */
export class WarnOnce {
  private readonly logged = new Set<string>();

  constructor(private readonly logger: LockLogger) {}

  warn(code: string, message: string, options?: ErrorOptions): void {
    if (this.logged.has(code)) return;
    this.logged.add(code);
    tell(this.logger, 'warn', new LockHttpWarning(code, message, options));
  }

  /** Lets `code` be logged again (a new outage after a recovery). */
  reset(code: string): void {
    this.logged.delete(code);
  }
}

/**
 * Hands `warning` to the user's logger. What the middleware tells must not change what it does:
 * a logger that throws would turn a request failing open into a 500, or, told after the
 * response in a promise nobody awaits, end the process as an unhandled rejection; so would an
 * async logger's rejection, which nobody awaits either.
 */
export function tell(logger: LockLogger, level: 'warn' | 'error', warning: LockHttpWarning): void {
  try {
    Promise.resolve(logger[level](warning) as unknown).catch(() => {});
  } catch {}
}
