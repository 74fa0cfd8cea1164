import { lostMessageBound, pollingAttemptsBound, seededRandom } from '@lock/testing';
import { expect, it } from 'vitest';

it('seededRandom replays the same numbers in [0, 1) from the same seed, and others from another', () => {
  const draw = (seed: number) => Array.from({ length: 1_000 }, seededRandom(seed));
  const first = draw(20261128);
  expect(draw(20261128)).toEqual(first);
  expect(draw(20261129)).not.toEqual(first);
  expect(first.every((value) => value >= 0 && value < 1)).toBe(true);
  // Spread over the interval, not stuck in a corner of it.
  expect(first.filter((value) => value < 0.5).length).toBeGreaterThan(400);
  expect(first.filter((value) => value < 0.5).length).toBeLessThan(600);
});

it('pollingAttemptsBound counts the first two attempts, one per shortest backoff step, and one per wake-up', () => {
  const retry = { base: 100, max: 400, jitter: 0.5 };
  // Steps of at least 50, 100, 200, 200, … ms: 0 ms allows the two first attempts and one step.
  expect(pollingAttemptsBound(retry, 0)).toBe(3);
  expect(pollingAttemptsBound(retry, 149)).toBe(4);
  expect(pollingAttemptsBound(retry, 150)).toBe(5);
  expect(pollingAttemptsBound(retry, 1_000)).toBe(pollingAttemptsBound(retry, 1_000, 0));
  expect(pollingAttemptsBound(retry, 1_000, 3)).toBe(pollingAttemptsBound(retry, 1_000) + 3);
});

it('lostMessageBound is the longest backoff, three commandTimeouts and the margin', () => {
  expect(lostMessageBound(1_000, 500)).toBe(3_500);
  expect(lostMessageBound(400, 200, 0)).toBe(1_000);
});
