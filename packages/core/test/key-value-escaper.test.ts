import { InvalidOptionError, keyTemplateEscaper, keyValueEscaper } from '@lock/core';
import { describe, expect, it } from 'vitest';
import { AWKWARD_NAMES } from './scenarios/support/awkward-names.js';

const VALUES = [
  ...AWKWARD_NAMES,
  '',
  'a',
  'b',
  'a:b',
  'b:c',
  ':',
  '\\',
  'a\\',
  '\\:',
  'a/b',
  'b/c',
  '/',
  '}{',
];

/** Every pair of values, put into `template` by `build`: no two pairs may give one key. */
function keysOfPairs(build: (a: string, b: string) => string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const a of VALUES) {
    for (const b of VALUES) {
      const key = build(a, b);
      expect(pairs.get(key), `${JSON.stringify([a, b])} builds ${JSON.stringify(key)}`).toBeUndefined();
      pairs.set(key, JSON.stringify([a, b]));
    }
  }
  return pairs;
}

describe('keyValueEscaper', () => {
  it('escapes the backslash, the colon and the braces, and nothing else by default', () => {
    const escapeValue = keyValueEscaper();
    expect(escapeValue('a:b{c}\\d/e.f-g')).toBe('a\\:b\\{c\\}\\\\d/e.f-g');
    expect(escapeValue('order-42')).toBe('order-42');
  });

  it('gives different pairs of values different keys, whatever the separator', () => {
    const colon = keyValueEscaper();
    expect(keysOfPairs((a, b) => `cart:${colon(a)}:${colon(b)}`).size).toBe(VALUES.length ** 2);
    const slash = keyValueEscaper(['/']);
    expect(keysOfPairs((a, b) => `cart/${slash(a)}/${slash(b)}.json`).size).toBe(VALUES.length ** 2);
    const emoji = keyValueEscaper(['\u{1F512}']);
    expect(keysOfPairs((a, b) => `${emoji(a)}\u{1F512}${emoji(b)}`).size).toBe(VALUES.length ** 2);
  });

  it.each([['\\'], ['::'], [''], ['ab']])('refuses the separator %j by name', (separator) => {
    expect(() => keyValueEscaper([separator])).toThrow(InvalidOptionError);
    expect(() => keyValueEscaper([separator])).toThrow(
      `invalid option "separators": ${JSON.stringify(separator)}`,
    );
  });
});

describe('keyTemplateEscaper', () => {
  const refuse = (why: string) => new Error(`template ${why}`);
  const user = { text: 'params.user' };
  const sku = { text: 'params.sku' };

  it("escapes each literal's first character between two values, so pairs never share a key", () => {
    const escapeValue = keyTemplateEscaper(['cart/', user, '/', sku, '.json'], refuse);
    expect(escapeValue('a/b:c')).toBe('a\\/b\\:c');
    expect(keysOfPairs((a, b) => `cart/${escapeValue(a)}/${escapeValue(b)}.json`).size).toBe(
      VALUES.length ** 2,
    );
  });

  it('does not escape the text after the last value, which never ends one', () => {
    expect(keyTemplateEscaper(['order:', user, '.json'], refuse)('a.b')).toBe('a.b');
  });

  it.each([
    [[user, sku], 'template has {params.user}{params.sku} side by side'],
    [['cart:', user, '\\x', sku], 'template has a backslash right after {params.user}'],
    [[`${'k'.repeat(4_095)}:`, user], 'template makes keys longer than the 4096 bytes a locker takes'],
  ])('refuses %j through the caller’s error', (parts, message) => {
    expect(() => keyTemplateEscaper(parts, refuse)).toThrow(message);
  });

  it('takes the longest text that leaves room for one byte per value', () => {
    expect(keyTemplateEscaper([`${'k'.repeat(4_094)}:`, user], refuse)('x')).toBe('x');
  });
});
