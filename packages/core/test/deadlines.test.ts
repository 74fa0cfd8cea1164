import { bounded, LockUnavailableError } from '@lock/core';
import { expect, it } from 'vitest';

/** A call Redis never answers. */
const never = () => new Promise<never>(() => {});

it('a deadline shorter than those already pending still fires first, and each call settles once by its own', async () => {
  const order: string[] = [];
  const watch = (name: string, timeout: number) =>
    bounded(never(), timeout, name, 'acquire').catch((error: unknown) => {
      order.push(name);
      return error;
    });
  const long = watch('long', 400);
  const short = watch('short', 40);
  const answered = bounded(Promise.resolve('ok'), 40, 'answered', 'acquire');
  expect(await answered).toBe('ok');
  expect(await short).toBeInstanceOf(LockUnavailableError);
  expect(order).toEqual(['short']);
  expect(await long).toBeInstanceOf(LockUnavailableError);
  expect(order).toEqual(['short', 'long']);
});
