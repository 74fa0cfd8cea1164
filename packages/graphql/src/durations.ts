/** Largest lease Redis timers and Node timers both accept (core refuses more). */
export const MAX_MS = 2 ** 31 - 1;

export function isTtl(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= MAX_MS;
}

export function isWait(value: unknown): value is number {
  return (
    value === Number.POSITIVE_INFINITY ||
    (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_MS)
  );
}
