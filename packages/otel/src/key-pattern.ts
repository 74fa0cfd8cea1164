/**
 * A part of a key kept as it is: a word, not an id, a number, an e-mail address or a token. At
 * most 32 letters in one of the shapes names take: `daily-report`, `user_profile`, `API_KEY`,
 * `orderLock`, `OrderLock`. A url-safe random id without digits mixes cases at random and seldom
 * takes one of them: about 1 in 10 000 21-character nanoids does (3 in 100 have no digit).
 */
const WORD = /^(?=.{1,32}$)(?:[a-z]+(?:[_-][a-z]+)*|[A-Z]+(?:[_-][A-Z]+)*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*)$/;
/** Separators of the parts of a key: the usual `:` and `/`, and the braces of a hash tag. */
const PART = /[^:/{}]+/g;

/**
 * The default `keyPattern`: keeps the words of a key and replaces every other part with `*`, so
 * spans name the kind of lock without recording ids: `order:42` → `order:*`,
 * `{tenant:7}:invoice:2024-001` → `{tenant:*}:invoice:*`, `mail:bob@example.com` → `mail:*`.
 * A part shaped as a word is kept, so a key holding a bare user name keeps it: give
 * `instrumentLocks` your own `keyPattern` for such keys.
 */
export function keyPattern(key: string): string {
  return key.replace(PART, (part) => (WORD.test(part) ? part : '*'));
}
