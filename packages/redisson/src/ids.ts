import { randomBytes, randomInt } from 'node:crypto';

/** One unlock call's request id: 16 random bytes in lowercase hex, as Redisson's generateId(). */
export function requestId(): string {
  return randomBytes(16).toString('hex');
}

/**
 * How long an unlock latch outlives a failed call, drawn per call as Redisson does with its
 * default retry settings: (3 000 ms timeout + 1 000–2 000 ms delay) × 4 attempts.
 */
export function latchTimeout(): number {
  return (3_000 + randomInt(1_000, 2_001)) * 4;
}
