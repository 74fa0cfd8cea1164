import { expect, it } from 'vitest';
import { phpAvailable } from './php.js';

it('has php-cli and php-predis when CI is set (outside CI a missing php only skips, loudly)', () => {
  expect(process.env.CI !== 'true' || phpAvailable).toBe(true);
});
