import { refusalHiding } from '@lock/testing';
import { expect } from 'vitest';

/** The call each factory's refusal shows, on a framework whose routes are declared on `routes`. */
const RIGHT_CALL = {
  lock: (routes: string) =>
    `lock() was called as a middleware, with a request for its options: lock(options) returns the middleware, so pass the route what it returns, not lock itself: ${routes}.post('/orders/:id', lock({ locker, key: 'order:{params.id}' }), handler)`,
  locked: (routes: string) =>
    `locked() was called as a route handler, with a request for its options: locked(options, route) returns the handler, so pass the route what it returns, not locked itself: ${routes}.post('/orders/:id', locked({ locker, key: 'order:{params.id}' }, handler))`,
};

/**
 * Checks the answer to a request whose route was handed `factory` (`lock`, or Express's
 * `locked`) itself, uncalled: a 500 from the one error the app's error handling saw
 * (`failures`), an `InvalidOptionError` showing the right call on the framework's `routes`
 * (`app`, `router`), and neither keeping nor printing the request's `secret`.
 */
export async function expectUncalledLockRefusal(
  answer: { status: number; body: unknown },
  failures: readonly unknown[],
  secret: string,
  routes: string,
  factory: keyof typeof RIGHT_CALL = 'lock',
): Promise<void> {
  expect([answer.status, answer.body]).toEqual([500, { code: 'ERR_LOCK_INVALID_OPTION' }]);
  expect(failures).toHaveLength(1);
  const failure = await refusalHiding(secret, () => {
    throw failures[0];
  });
  expect(failure).toMatchObject({ name: 'InvalidOptionError', option: 'options', value: undefined });
  expect(failure.message).toBe(RIGHT_CALL[factory](routes));
}
