import { LockAbortError } from '@lock/core';
import { commandsInFlight, proxiedClient, startRedis } from '@lock/testing';
import { expect, it } from 'vitest';
import { createRedisson } from '../src/index.js';

/**
 * A fair-lock waiter gives up while its attempt's EVALSHA is on a slow connection to a server
 * that lost its scripts (a failover, a restart, SCRIPT FLUSH): the NOSCRIPT answer comes after
 * the give-up left the queue, and the attempt sent whole then would queue the owner again, a
 * ghost ahead of every later waiter until its allowance runs out.
 */
it('an aborted fair-lock wait sends no script after its give-up, even when the server lost its scripts', async () => {
  const name = 'unsent';
  await using server = await startRedis();
  const admin = server.client();
  await using link = await proxiedClient(server);
  const commands = commandsInFlight(link.redis);
  // No replica check before the attempt: the only command out when the call gives up is the script.
  const redisson = createRedisson({ redis: link.redis, commandTimeout: 500, replication: false });
  const holder = createRedisson({ redis: server.client() });
  try {
    const lock = redisson.getFairLock(name);
    await lock.lock({ threadId: 1 });
    await lock.unlock({ threadId: 1 });
    await holder.getFairLock(name).lock({ threadId: 1 });
    // The attempt's EVALSHA is answered NOSCRIPT after the give-up went out: its EVAL would follow it.
    await admin.script('FLUSH');
    // Slower than the give-up: an owner of a thread is not fresh, so its call gives its attempt up
    // at the command timeout and leaves the queue at most one command timeout later (1 s).
    link.proxy.delay({ upstream: 0, downstream: 1_500 });
    const controller = new AbortController();
    const waiting = lock.lock({ threadId: 2, signal: controller.signal });
    setTimeout(() => controller.abort(), 10);
    expect(await waiting.catch((error: unknown) => error)).toBeInstanceOf(LockAbortError);
    await redisson.shutdown();
    link.proxy.pass();
    await commands.drained();
    expect(await admin.lrange(`redisson_lock_queue:{${name}}`, 0, -1)).toEqual([]);
    expect(await admin.zcard(`redisson_lock_timeout:{${name}}`)).toBe(0);
  } finally {
    await redisson.shutdown();
    await holder.shutdown();
  }
}, 30_000);
