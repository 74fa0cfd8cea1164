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

it('a deadline further away than a Node timer reaches is armed in steps, never fired at once', async () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  try {
    let answer!: (value: string) => void;
    // A command timeout and WAIT's allowance, each below 2^31 ms, add up past what a timer takes.
    const call = bounded(new Promise<string>((resolve) => (answer = resolve)), 2 ** 32, 'far', 'acquire');
    // Node emits TimeoutOverflowWarning on the tick after the timer was set.
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.map((warning) => warning.name)).not.toContain('TimeoutOverflowWarning');
    answer('ok');
    expect(await call).toBe('ok');
  } finally {
    process.off('warning', onWarning);
  }
});
