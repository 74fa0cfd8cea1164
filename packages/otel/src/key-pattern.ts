/** A part of a key kept as it is: a word, not an id, a number, an e-mail address or a token. */
const WORD = /^[A-Za-z_-]{1,32}$/;
/** Separators of the parts of a key: the usual `:` and `/`, and the braces of a hash tag. */
const PART = /[^:/{}]+/g;

/**
 * The default `keyPattern`: keeps the words of a key and replaces every other part with `*`, so
 * spans name the kind of lock without recording ids: `order:42` → `order:*`,
 * `{tenant:7}:invoice:2024-001` → `{tenant:*}:invoice:*`, `mail:bob@example.com` → `mail:*`.
 * A part made only of letters, `_` and `-` is kept, so a key holding a bare user name keeps it:
 * give `instrumentLocks` your own `keyPattern` for such keys.
 */
export function keyPattern(key: string): string {
  return key.replace(PART, (part) => (WORD.test(part) ? part : '*'));
}
