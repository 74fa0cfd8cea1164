import { ReleaseListener, singleBackend, tokenProtocol } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';
import { type Waiter, WaitQueues } from '../../src/engine/waiters.js';

const LINGER = 200;

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
  const redis = server.client();
  // Short lingers (5 s each by default), so that the sweep comes within a second.
  const subscriber = new ReleaseListener(redis, LINGER);
  const backend = singleBackend(redis, tokenProtocol(), { replication: false, subscriber });
  const queues = new WaitQueues(backend.protocol, backend.listen!, () => performance.now(), LINGER);
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
  // The queue lingers empty before the sweeper lets its channel go, and the release listener
  // keeps the channel as long again before it unsubscribes.
  await waitFor('the late queue to be swept', async () => (await subscribers(second.channel)) === 0, {
    timeout: 10 * LINGER,
  });
  await backend.close();
  await subscriber.close();
});
