/** With the `u` flag, only a surrogate not paired into one code point matches. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Whether `value` can go into a key without meeting another value's: false when it holds a lone
 * UTF-16 surrogate, which reaches Redis as the bytes of U+FFFD (possible in JSON, never in a URL).
 */
export function isWellFormedValue(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}
