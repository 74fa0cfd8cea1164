import { MAX_KEY_BYTES } from './engine/options.js';
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

/** A key template's parts in order: literal text, and the values between (named by `text` in messages). */
export type KeyTemplatePart = string | { readonly text: string };

/**
 * The escaper of a parsed key template (`keyValueEscaper` with the template's separators), after
 * refusing a template that no escaping keeps apart (two values side by side, or a separator that
 * starts with a backslash) or whose text alone makes keys longer than a locker takes. `refuse(why)`
 * makes the adapter's own error; `why` reads after the template's name ("has …", "makes …").
 */
export function keyTemplateEscaper(
  parts: readonly KeyTemplatePart[],
  refuse: (why: string) => Error,
): (value: string) => string {
  // With every value one byte long: over the limit, every call would be refused.
  const shortest = parts.reduce(
    (bytes, part) => bytes + (typeof part === 'string' ? Buffer.byteLength(part) : 1),
    0,
  );
  if (shortest > MAX_KEY_BYTES)
    throw refuse(`makes keys longer than the ${MAX_KEY_BYTES} bytes a locker takes by its text alone`);
  const separators: string[] = [];
  parts.forEach((part, i) => {
    const next = parts[i + 1];
    if (typeof part === 'string' || next === undefined) return;
    if (typeof next !== 'string')
      throw refuse(
        `has {${part.text}}{${next.text}} side by side: put a separator between them, or their values could not be told apart`,
      );
    if (parts[i + 2] === undefined) return;
    // Read from the left, a backslash after a value starts an escape, not the next part.
    if (next.startsWith('\\'))
      throw refuse(
        `has a backslash right after {${part.text}}: its values could not be told apart, start the separator with another character`,
      );
    separators.push(String.fromCodePoint(next.codePointAt(0) as number));
  });
  return keyValueEscaper(separators);
}
