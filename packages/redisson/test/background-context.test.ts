import { AsyncLocalStorage } from 'node:async_hooks';
import { waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { Redisson } from '../src/index.js';
import { useRedisson } from './helpers/server.js';

/**
 * A client makes the engine of a lock kind on the first lock of that kind, inside whatever
 * request takes it. The engine's watchdog outlives that request: its renewals must not run in
 * the request's async context (AsyncLocalStorage, and so a tracer's active span).
 */
describe('an engine made on first use inside a request', () => {
  let redis!: Redis;
  let redisson!: Redisson;
  useRedisson(
    (setup) => {
      ({ redis, redisson } = setup);
    },
    { lockWatchdogTimeout: 300 },
  );

  it('renews locks outside that request’s async context', async () => {
    const request = new AsyncLocalStorage<string>();
    // The request each script call of the client was sent in.
    const sent: (string | undefined)[] = [];
    const client = Object.getPrototypeOf(redis) as Redis;
    const { sendCommand } = client;
    client.sendCommand = function (this: Redis, command, stream) {
      if (command.name === 'evalsha') sent.push(request.getStore());
      return sendCommand.call(this, command, stream);
    } as typeof sendCommand;
    onTestFinished(() => {
      client.sendCommand = sendCommand;
    });

    await request.run('request A', async () => {
      const first = redisson.getLock('first');
      await first.lock({ threadId: 1 });
      await first.unlock({ threadId: 1 });
    });
    expect(sent).toContain('request A');

    const lock = redisson.getLock('later');
    await lock.lock({ threadId: 1 });
    const from = sent.length;
    await waitFor('a renewal', async () => sent.length > from);
    const renewals = sent.slice(from);
    await lock.unlock({ threadId: 1 });
    expect(renewals).not.toContain('request A');
  });
});
