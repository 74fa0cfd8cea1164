import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLocker, LockAbortError } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { untilQueued } from '../support/waiter-queue.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return process.memoryUsage().heapUsed;
}

it('keeps nothing per call reachable from the locker when every acquire is given its own AbortSignal', async () => {
  await using server = await startRedis();
  const locker = createLocker({ redis: server.client() });
  const loops = 25;
  const run = async (rounds: number) => {
    await Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        for (let i = 0; i < rounds; i++) {
          const controller = new AbortController();
          const lock = await locker.acquire(`signal:${loop}`, { ttl: 5_000, signal: controller.signal });
          await lock.release();
        }
      }),
    );
  };
  await run(200);
  const before = await heapAfterGc();
  await run(1_600);
  const growth = (await heapAfterGc()) - before;
  // 40 000 acquisitions: a composite signal kept per call (AbortSignal.any on Node 20) costs
  // about 70 bytes each, 2.8 MB here; a flat engine stays well under 1 MB.
  expect(growth).toBeLessThan(1_000_000);
  await locker.close();
});

it('a signal shared by 30 waiting calls carries one listener of ours, none once they settle or abort, and no listener warning', async () => {
  await using server = await startRedis();
  const holder = createLocker({ redis: server.client() });
  const locker = createLocker({ redis: server.client() });
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  try {
    const controller = new AbortController();
    const { signal } = controller;
    const waitAll = async () => {
      const held = await holder.acquire('shared', { ttl: 30_000 });
      const calls = Array.from({ length: 30 }, () => locker.acquire('shared', { wait: 30_000, signal }));
      // Read below; a failed expectation would otherwise leave them to reject unhandled at close().
      for (const call of calls) call.catch(() => {});
      await untilQueued(server.client(), 'shared', 30);
      expect(getEventListeners(signal, 'abort')).toHaveLength(1);
      return { held, calls };
    };

    const served = await waitAll();
    await served.held.release();
    for (const call of served.calls) await (await call).release();
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);

    const aborted = await waitAll();
    controller.abort();
    const outcomes = await Promise.allSettled(aborted.calls);
    expect(
      outcomes.map((outcome) => outcome.status === 'rejected' && outcome.reason instanceof LockAbortError),
    ).toEqual(Array(30).fill(true));
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    await aborted.held.release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual([]);
  } finally {
    process.off('warning', onWarning);
    await locker.close();
    await holder.close();
  }
});
