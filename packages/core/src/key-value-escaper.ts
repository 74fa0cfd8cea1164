import { InvalidOptionError } from './errors.js';

/** Escaped in every value: the escape itself, the namespace separator and the hash-tag braces. */
const ALWAYS = ['\\', ':', '{', '}'];

/**
 * How the HTTP and GraphQL adapters put a value into a key template, so that different values
 * never build the same key: a backslash goes in front of `\`, `:`, `{`, `}` and of each
 * `separator` (the first character of each literal text between two values of the template).
 * Read from the left, a value then ends at the first unescaped separator, so
 * `cart/{user}/{sku}` splits back one way only. Code outside the adapters that must name the
 * same lock builds its key with it: `'cart:' + escapeValue(user) + ':' + escapeValue(sku)`.
 * Values must be well-formed Unicode (`isWellFormedValue`): Node writes a lone UTF-16 surrogate as
 * the bytes of U+FFFD, so `'\uD800'` and `'\uFFFD'` would name one key; the adapters refuse such values.
 */
export function keyValueEscaper(separators: readonly string[] = []): (value: string) => string {
  for (const separator of separators) {
    // A backslash separator could not be told from an escape; a longer one is not how values end.
    if ([...separator].length !== 1 || separator === '\\') {
      throw new InvalidOptionError('separators', separator, 'single characters other than "\\"');
    }
  }
  const special = new Set([...ALWAYS, ...separators]);
  return (value) => {
    let escaped = '';
    for (const char of value) escaped += special.has(char) ? `\\${char}` : char;
    return escaped;
  };
}

/** With the `u` flag, only a surrogate not paired into one code point matches. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Whether `value` can go into a key without meeting another value's: false when it holds a lone
 * UTF-16 surrogate, which reaches Redis as the bytes of U+FFFD (possible in JSON, never in a URL).
 */
export function isWellFormedValue(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}
