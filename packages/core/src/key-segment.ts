import { isWellFormedValue } from './well-formed.js';

/**
 * Why a value cannot be one segment of a key built from a template (`order:{id}`). Each adapter
 * turns it into its own error: which of them is the caller's mistake depends on where the value
 * came from, which only the adapter knows.
 */
export interface KeySegmentProblem {
  /**
   * - `missing`: `undefined` or `null`, which `String` would write as `order:undefined`, one lock
   *   for every call that lacks the value.
   * - `empty`: `''`, the same for `order:`.
   * - `lone-surrogate`: a string holding a lone UTF-16 surrogate, which Node writes as the bytes of
   *   U+FFFD: `'\uD800'`, `'\uDFFF'` and `'\uFFFD'` would share a lock.
   * - `not-finite`: `NaN` or ±`Infinity`; `NaN` is what a failed parse gives, so every input that
   *   fails to parse would share `order:NaN`.
   * - `not-scalar`: anything but a string, number, bigint or boolean (an array, an object, a
   *   function, a symbol), which has no single text of its own.
   */
  readonly problem: 'missing' | 'empty' | 'lone-surrogate' | 'not-finite' | 'not-scalar';
}

// Shared and frozen: refusing a value allocates nothing.
const problem = (name: KeySegmentProblem['problem']): KeySegmentProblem => Object.freeze({ problem: name });
const MISSING = problem('missing');
const EMPTY = problem('empty');
const LONE_SURROGATE = problem('lone-surrogate');
const NOT_FINITE = problem('not-finite');
const NOT_SCALAR = problem('not-scalar');

/**
 * The text one value puts in a key (`String(value)`, before escaping), or why it cannot be one:
 * tell them apart with `typeof result === 'string'`. Takes a non-empty string, a finite number, a
 * bigint or a boolean.
 */
export function keySegmentText(value: unknown): string | KeySegmentProblem {
  switch (typeof value) {
    case 'string':
      if (value === '') return EMPTY;
      return isWellFormedValue(value) ? value : LONE_SURROGATE;
    case 'number':
      return Number.isFinite(value) ? String(value) : NOT_FINITE;
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'undefined':
      return MISSING;
    default:
      return value === null ? MISSING : NOT_SCALAR;
  }
}
