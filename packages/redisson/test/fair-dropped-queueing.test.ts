import { DEFAULT_RETRY } from '@lock/core';
import { lostMessageBound, proxiedClient, startRedis, type TcpProxy, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, FAIR_WAIT_ALLOWANCE, type Redisson } from '../src/index.js';

/**
 * A fair-lock waiter whose first attempt, the one that queues it, runs on Redis but loses its
 * reply to a connection reset, on a client that drops what it had not had answered
 * (`autoResendUnfulfilledCommands: false`): the attempt never settles, so the engine gives it up
 * at its command timeout. The queue entry that attempt wrote is the waiter's own place: its next
 * attempt finds it (no second entry) and, once the lock is free, takes the lock from it. The
 * entry's deadline (the holder's TTL plus the 300 s allowance) must never be what the waiter
 * waits for: it gets the lock within the engine's bound for a lost release message.
 */
/**
 * The waiting client's command timeout: how long the engine waits for the dropped attempt before
 * giving it up. Long enough that the first case unlocks well within it on a loaded host.
 */
const UNANSWERED_FOR = 5_000;
const FOUND_WITHIN = lostMessageBound(DEFAULT_RETRY.max, UNANSWERED_FOR);

describe('a fair-lock waiter whose queueing attempt was dropped with its connection', () => {
  let stop: () => Promise<void>;
  let proxy: TcpProxy;
  let direct: Redis;
  let holder: Redisson;
  let waiting: Redisson;

  beforeAll(async () => {
    const server = await startRedis();
    const proxied = await proxiedClient(server, { redis: { autoResendUnfulfilledCommands: false } });
    proxy = proxied.proxy;
    direct = server.client();
    holder = createRedisson({ redis: server.client() });
    waiting = createRedisson({ redis: proxied.redis, commandTimeout: UNANSWERED_FOR });
    // The server checked and the scripts loaded first: the queueing script's reply is the first
    // one the reset meets, not a check's or a NOSCRIPT.
    await waiting.getFairLock('warm-up').lock({ threadId: 1 });
    await waiting.getFairLock('warm-up').unlock({ threadId: 1 });
    stop = async () => {
      await waiting.shutdown();
      await holder.shutdown();
      await proxied.close();
      await server.stop();
    };
  });
  afterAll(() => stop());

  /** Queues the waiter behind the holder with its first reply reset; answers when it holds. */
  async function queueDropped(name: string) {
    const owner = `${waiting.id}:1`;
    await holder.getFairLock(name).lock({ threadId: 1 });
    const resets = proxy.resets;
    proxy.resetAfter(0, 'downstream', 1);
    let heldAt: number | undefined;
    const sentAt = performance.now();
    const waiter = waiting
      .getFairLock(name)
      .lock({ threadId: 1 })
      .then(() => {
        heldAt = performance.now();
      });
    const queued = async () =>
      JSON.stringify(await direct.lrange(`redisson_lock_queue:{${name}}`, 0, -1)) === JSON.stringify([owner]);
    await waitFor('the waiter queued', queued, { interval: 5 });
    await waitFor('its reply reset', async () => proxy.resets === resets + 1, { interval: 5 });
    // Its deadline: the holder's TTL and the allowance, far past anything the waiter may wait.
    const deadline = Number(await direct.zscore(`redisson_lock_timeout:{${name}}`, owner));
    expect(deadline).toBeGreaterThan(Date.now() + FAIR_WAIT_ALLOWANCE);
    return { owner, queued, waiter, sentAt, heldAt: () => heldAt };
  }

  async function unlockAndMeasure(name: string, queue: Awaited<ReturnType<typeof queueDropped>>) {
    expect(queue.heldAt()).toBeUndefined();
    const unlockedAt = performance.now();
    await holder.getFairLock(name).unlock({ threadId: 1 });
    await waitFor('the waiter holds the lock', async () => queue.heldAt() !== undefined, {
      timeout: FOUND_WITHIN + 5_000,
      interval: 5,
    });
    await queue.waiter;
    expect(queue.heldAt()! - unlockedAt).toBeLessThan(FOUND_WITHIN);
    expect(await direct.hget(name, queue.owner)).toBe('1');
    await waiting.getFairLock(name).unlock({ threadId: 1 });
    expect(
      await direct.exists(name, `redisson_lock_queue:{${name}}`, `redisson_lock_timeout:{${name}}`),
    ).toBe(0);
  }

  it('takes the lock promptly when the holder unlocks while that attempt is still unanswered', async () => {
    const name = 'dropped:unanswered';
    const queue = await queueDropped(name);
    // Before the engine could give the attempt up: it is still unanswered when the holder unlocks.
    expect(performance.now() - queue.sentAt).toBeLessThan(UNANSWERED_FOR);
    await unlockAndMeasure(name, queue);
  }, 60_000);

  it('takes the lock promptly when the holder unlocks after its next attempt found its place', async () => {
    const name = 'dropped:requeued';
    const queue = await queueDropped(name);
    // Its next attempt subscribes to its own channel; the queue still holds the one entry.
    await waitFor(
      'the waiter subscribed',
      async () => {
        const [, count] = (await direct.pubsub(
          'NUMSUB',
          `redisson_lock__channel:{${name}}:${queue.owner}`,
        )) as [string, number];
        return Number(count) === 1;
      },
      { interval: 5 },
    );
    expect(await queue.queued()).toBe(true);
    await unlockAndMeasure(name, queue);
  }, 60_000);
});
