import { singleBackend, tokenProtocol } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { type Waiter, WaitQueues } from '../../src/engine/waiters.js';

function waiter(owner: string): Waiter {
  return { owner, notified: false, granted: undefined, wake: undefined };
}

it('ends the subscription of a queue joined after close(), once it lingered empty: the sweeper re-arms', async () => {
  await using server = await startRedis();
  const admin = server.client();
  const subscribers = async (channel: string) => {
    const [, count] = (await admin.pubsub('NUMSUB', channel)) as [string, number];
    return Number(count);
  };
  const backend = singleBackend(server.client(), tokenProtocol(), { replication: false });
  const queues = new WaitQueues(backend, () => performance.now());
  // A waiter that leaves arms the sweeper; close() cancels it.
  const before = waiter('before-close');
  const first = queues.join('{lock:first}', before.owner, before, performance.now());
  await first.subscribed;
  queues.leave(first.channel, before);
  queues.close();

  // A join that comes after close() (an attempt that was in flight) must not subscribe for good.
  const after = waiter('after-close');
  const second = queues.join('{lock:second}', after.owner, after, performance.now());
  await second.subscribed;
  expect(await subscribers(second.channel)).toBe(1);
  queues.leave(second.channel, after);
  // The queue lingers 5 s empty before the sweeper lets its channel go, and the release listener
  // keeps the channel 5 s more before it unsubscribes.
  await waitFor('the late queue to be swept', async () => (await subscribers(second.channel)) === 0, {
    timeout: 15_000,
  });
  await backend.close();
}, 20_000);
