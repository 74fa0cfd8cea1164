import type { AttemptContext } from '@lock/core';
import { attemptLatch } from './names.js';

/**
 * What an acquire script takes last in KEYS for `context`'s attempt: its latch, so that a copy
 * of the attempt already applied counts no second hold (see attempt.lua, which every acquire
 * script is prefixed with). Nothing without an attempt id: then every copy counts.
 */
export function attemptKeys(resource: string, context: AttemptContext | undefined): string[] {
  return context?.attempt ? [attemptLatch(resource, context.attempt)] : [];
}
