import { MAX_TTL, MIN_TTL } from '@lock/core';

/** Core's rule for a ttl, as a test: a directive argument is refused naming its field. */
export function isTtl(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= MIN_TTL && value <= MAX_TTL;
}

export function isWait(value: unknown): value is number {
  return (
    value === Number.POSITIVE_INFINITY ||
    (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TTL)
  );
}
