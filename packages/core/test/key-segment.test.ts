import { keySegmentText } from '@lock/core';
import { describe, expect, it } from 'vitest';

describe('keySegmentText', () => {
  it.each([
    ['42', '42'],
    [' ', ' '],
    ['\uFFFD', '\uFFFD'],
    ['\uD83D\uDD12', '\u{1F512}'],
    [42, '42'],
    [-0.5, '-0.5'],
    [0, '0'],
    [10n ** 30n, '1000000000000000000000000000000'],
    [true, 'true'],
    [false, 'false'],
  ])('writes %o as %j', (value, text) => {
    expect(keySegmentText(value)).toBe(text);
  });

  it.each([
    [undefined, 'missing'],
    [null, 'missing'],
    ['', 'empty'],
    ['\uD800', 'lone-surrogate'],
    ['x\uDFFF', 'lone-surrogate'],
    ['\uDE00\uD83D', 'lone-surrogate'],
    [Number.NaN, 'not-finite'],
    [Number.POSITIVE_INFINITY, 'not-finite'],
    [Number.NEGATIVE_INFINITY, 'not-finite'],
    [['1'], 'not-scalar'],
    [{ id: 1 }, 'not-scalar'],
    [new Date(0), 'not-scalar'],
    [() => '1', 'not-scalar'],
    [Symbol('id'), 'not-scalar'],
    [Object('1'), 'not-scalar'],
  ])('refuses %o as %s', (value, problem) => {
    expect(keySegmentText(value)).toEqual({ problem });
  });

  it('refuses with shared frozen problems, so a refusal allocates nothing', () => {
    const first = keySegmentText(Number.NaN);
    expect(keySegmentText(Number.POSITIVE_INFINITY)).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
  });
});
