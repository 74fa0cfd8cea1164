/**
 * S25: lock names that must be stored byte for byte: injection attempts (CRLF, a RESP-encoded
 * `DEL canary`), NUL, glob characters, NFC/NFD and Latin/Cyrillic look-alikes, an emoji, and
 * every shape of hash-tag braces. Shared by the single-server and cluster runs of
 * `key-names.test.ts`.
 */
export const AWKWARD_NAMES: readonly string[] = [
  'crlf\r\nFLUSHALL\r\n',
  '*3\r\n$3\r\nDEL\r\n$6\r\ncanary\r\n',
  'nul\u0000byte',
  '*',
  'a?c',
  '[ab]c',
  'caf\u00e9', // NFC
  'cafe\u0301', // NFD: looks the same, other bytes
  'paypal',
  'p\u0430ypal', // Cyrillic а
  '\u{1F512}',
  '{}',
  'a{b',
  'x{}y',
  '{tag}',
];

/** A name of 1 MB: refused by name (`InvalidKeyError`) before anything is written. */
export const HUGE_NAME = 'k'.repeat(1024 * 1024);
