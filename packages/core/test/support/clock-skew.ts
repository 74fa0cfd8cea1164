import { vi } from 'vitest';

/** The warnings with `code` that `process.emitWarning` was called with, from now on (silenced). */
export function warningsWith(code: string): () => string[] {
  const spy = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
  return () =>
    spy.mock.calls
      .filter((call) => (call[1] as { code?: string } | undefined)?.code === code)
      .map((call) => String(call[0]));
}

/** The clock-skew warnings `process.emitWarning` was called with, from now on. */
export function skewWarnings(): () => string[] {
  return warningsWith('ERR_LOCK_CLOCK_SKEW');
}

/**
 * Stalls this process for `ms` right after `redis` writes its next command named `name` whose
 * arguments include `marker`, if given (a GC pause, a busy event loop): its reply is read that much later.
 */
export function stallAfterSending(
  redis: { sendCommand: (command: never, ...rest: never[]) => unknown },
  name: string,
  ms: number,
  marker?: string,
  times = 1,
): void {
  const send = redis.sendCommand.bind(redis);
  let stalls = times;
  redis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: never[]) => {
    const result = send(command as never, ...rest);
    if (
      stalls > 0 &&
      command.name === name &&
      (marker === undefined || command.args.some((arg) => String(arg).includes(marker)))
    ) {
      stalls -= 1;
      const until = Date.now() + ms;
      while (Date.now() < until) {
        // Busy: nothing else runs meanwhile, as in a stall.
      }
    }
    return result;
  }) as never;
}
