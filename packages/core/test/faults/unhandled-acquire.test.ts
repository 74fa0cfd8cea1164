import { createLocker } from '@lock/core';
import { startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { startScript } from '../support/script-process.js';

it('an acquire rejection nobody handles is reported unhandled, as any promise’s is: the engine attaches nothing to it', async () => {
  await using server = await startRedis();
  const holder = createLocker({ redis: server.client() });
  await holder.acquire('held', { ttl: 30_000 });
  const child = startScript(new URL('./support/unhandled-acquire.ts', import.meta.url), {
    url: server.url,
    key: 'held',
  });
  try {
    expect(await child.line((line) => line.startsWith('unhandled'))).toBe('unhandled LockBusyError');
  } finally {
    await child.stop();
    await holder.close();
  }
}, 15_000);
