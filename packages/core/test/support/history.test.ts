import { describe, expect, it } from 'vitest';
import { checkHistory } from './history.js';

describe('checkHistory', () => {
  it('accepts disjoint intervals with increasing fences', () => {
    const verdict = checkHistory([
      { worker: 1, start: 10n, end: 20n, fence: 1 },
      { worker: 2, start: 21n, end: 30n, fence: 2 },
    ]);
    expect(verdict).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: 2 });
  });

  it('counts an interval that starts before an earlier one ended, even behind a short one', () => {
    const verdict = checkHistory([
      { worker: 1, start: 10n, end: 100n, fence: 1 },
      { worker: 2, start: 20n, end: 30n, fence: 2 },
      { worker: 3, start: 50n, end: 60n, fence: 3 },
    ]);
    expect(verdict.overlaps).toBe(2);
  });

  it('counts fences that do not increase in start order', () => {
    const verdict = checkHistory([
      { worker: 1, start: 10n, end: 20n, fence: 5 },
      { worker: 2, start: 30n, end: 40n, fence: 5 },
      { worker: 2, start: 50n, end: 60n, fence: 4 },
    ]);
    expect(verdict.fenceRegressions).toBe(2);
  });
});
