import { keyPattern } from '@lock/otel';
import { expect, it } from 'vitest';

it('keeps the words of a key and replaces ids, numbers, addresses and tokens with *', () => {
  const cases: Record<string, string> = {
    'order:42': 'order:*',
    'order:42:items': 'order:*:items',
    'user:550e8400-e29b-41d4-a716-446655440000': 'user:*',
    'mail:bob@example.com': 'mail:*',
    '{tenant:7}:invoice:2024-001': '{tenant:*}:invoice:*',
    'files/reports/q3.pdf': 'files/reports/*',
    'cron:daily-report': 'cron:daily-report',
    'job:QmFzZTY0VG9rZW5CdXRPbmx5TGV0dGVyc0Fu': 'job:*',
    'a::b': 'a::b',
    'queue:high priority': 'queue:*',
    // Url-safe random ids with no digit (about 3 % of 21-character nanoids): not words.
    'session:ScW-LLeMNejjraxg_nLFt': 'session:*',
    'invite:Zq_VbNm-KlJhGfDs': 'invite:*',
    'session:kJhGtRfEdWsQaZxCvBnMlPoIuYtReWqA': 'session:*',
    'OrderLock:7': 'OrderLock:*',
    'rateLimit:API_KEY:user_profile': 'rateLimit:API_KEY:user_profile',
  };
  expect(Object.fromEntries(Object.keys(cases).map((key) => [key, keyPattern(key)]))).toEqual(cases);
});
