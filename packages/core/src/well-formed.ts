/** With the `u` flag, only a surrogate not paired into one code point matches. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Whether `value` can go into a key without meeting another value's: false when it holds a lone
 * UTF-16 surrogate, which reaches Redis as the bytes of U+FFFD (possible in JSON, never in a URL).
 */
export function isWellFormedValue(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}

/** Why a string that is not well-formed is refused, for the errors that say so. */
export const LONE_SURROGATE_REFUSAL = 'holds a lone UTF-16 surrogate, which Redis would receive as U+FFFD';
